"""Deterministic sampling by trace id: the same trace is in or out in every process, on every
machine and on every rerun (``score --sample``, ``score --follow --sample``,
``dataset build --sample``), and sampling rules by attribute (``sampling:`` in the config,
``score --follow`` and ``backfill``).

A trace id maps to a bucket in [0, 1) (the first 8 bytes of its SHA-256, as a fraction of
2**64); a fraction ``f`` keeps the traces whose bucket is below ``f``, and a count ``n`` keeps
the ``n`` lowest buckets, so a count always picks a subset of what a larger fraction picks.
Samples are therefore nested: a trace in the 1% sample is in the 10% one, whichever rule or
option gave each rate.

**Rules** (:class:`SamplingRules`): each rule matches attributes of a trace's resources or
spans (``service.name``, ``deployment.environment``, any attribute; every key of its
``match`` must hold, a key matching when any resource or span of the trace carries one of
the listed values) and gives the rate of the traces it matches; the first rule that matches
wins, and a trace no rule matches takes the default rate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


def bucket(trace_id: str) -> float:
    """The trace id's position in [0, 1) (see the module docstring)."""
    return int.from_bytes(hashlib.sha256(trace_id.encode()).digest()[:8], "big") / 2**64


def sampled(trace_id: str, fraction: float) -> bool:
    """True when ``trace_id`` is in a ``fraction`` (0-1] sample."""
    return bucket(trace_id) < fraction


def lowest(ids: Iterable[str], count: int) -> set[str]:
    """The ``count`` ids with the lowest buckets (all of them when there are fewer)."""
    return set(sorted(set(ids), key=lambda i: (bucket(i), i))[:count])


@dataclass(frozen=True)
class SamplingRule:
    """Traces whose attributes hold every key of ``match`` (one of its values) are kept at
    ``rate`` (0-1); ``name`` names the rule in messages (default: its match)."""

    match: Mapping[str, tuple[str, ...]]
    rate: float
    name: str | None = None

    def matches(self, attributes: Sequence[Mapping[str, object]]) -> bool:
        """True when, for every key, some mapping of ``attributes`` (the trace's resources
        and spans) holds one of the key's values (compared as text)."""
        return all(
            any(key in found and str(found[key]) in values for found in attributes)
            for key, values in self.match.items()
        )

    @property
    def label(self) -> str:
        """``name``, else ``key=value,...`` of the match."""
        return self.name or ",".join(f"{k}={'|'.join(v)}" for k, v in sorted(self.match.items()))


@dataclass(frozen=True)
class SamplingRules:
    """The rules of the ``sampling:`` config section, in order, and the ``default`` rate of
    a trace no rule matches (module docstring)."""

    rules: tuple[SamplingRule, ...] = ()
    default: float = 1.0
    keys: frozenset[str] = field(init=False)
    """Every attribute some rule looks at."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", frozenset(k for r in self.rules for k in r.match))

    def rate(self, attributes: Sequence[Mapping[str, object]]) -> float:
        """The rate of a trace with these resource and span attributes."""
        for rule in self.rules:
            if rule.matches(attributes):
                return rule.rate
        return self.default

    def keeps(self, trace_id: str, attributes: Sequence[Mapping[str, object]]) -> bool:
        """True when the trace is in the sample its rule (or the default) gives."""
        rate = self.rate(attributes)
        return rate >= 1.0 or sampled(trace_id, rate)

    @property
    def everything(self) -> bool:
        """True when every trace is kept (no rule below 1, a default of 1)."""
        return self.default >= 1.0 and all(r.rate >= 1.0 for r in self.rules)
