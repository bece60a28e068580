"""Completeness: does the final answer mention every expected field?

Each ``expected_fields`` entry matches through its alias list (defaults in
``config/aliases.yaml``, extended by the config's and the dataset's ``field_aliases``) plus
its own name with underscores read as spaces, on word boundaries: "profit margin" never
counts as "price", while the symbol alias "$" matches "$199" (:mod:`tracegrade.scoring.text`).
The value is the fraction of fields found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.text import found_phrases
from tracegrade.trace import AgentTrace


def field_phrases(name: str, aliases: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The phrases that count as mentioning field ``name``."""
    own = [name, name.replace("_", " ")]
    return list(dict.fromkeys([*own, *aliases.get(name, ())]))


@dataclass(frozen=True)
class Completeness:
    """Fraction of expected fields the answer mentions (via aliases, on word boundaries)."""

    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    name: str = "completeness"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if case is None or not case.expected_fields:
            return skipped(self.name, "the case expects no fields")
        if trace.final_output is None:
            gap = trace.gap("final_output")
            if gap:
                return skipped(self.name, gap.reason)
            return Score(self.name, 0.0, "no final answer", details={"missing": list(case.expected_fields)})
        found, missing = [], []
        for name in case.expected_fields:
            (found if found_phrases(trace.final_output, field_phrases(name, self.aliases)) else missing).append(name)
        reason = f"{len(found)}/{len(case.expected_fields)} expected field(s) in the answer"
        return Score(self.name, len(found) / len(case.expected_fields),
                     reason + (f"; missing {missing}" if missing else ""), details={"found": found, "missing": missing})


@register("completeness")
def _completeness(config: Config) -> Completeness:
    return Completeness(config.field_aliases)
