"""Completeness: does the final answer mention every expected field?

An ``expected_fields`` entry is present when the answer

- names it: one of its aliases (defaults in ``config/aliases.yaml``, extended by the
  config's and the dataset's ``field_aliases``) or its own name with underscores read as
  spaces, on word boundaries: "profit margin" never counts as "price", while the symbol
  alias "$" matches "$199" (:mod:`tracegrade.scoring.text`); or
- states its value: a tool result (JSON) has that field, and its value appears in the answer
  (strings as phrases, numbers by value, so ``"price": 279.99`` is stated by "$279.99").

The value is the fraction of fields present; ``details`` says how each was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.text import contains_phrase, found_phrases
from tracegrade.scoring.values import EvidenceValues
from tracegrade.spans import loads_maybe
from tracegrade.trace import AgentTrace


def field_phrases(name: str, aliases: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The phrases that count as mentioning field ``name``."""
    own = [name, name.replace("_", " ")]
    return list(dict.fromkeys([*own, *aliases.get(name, ())]))


def field_values(results: list[str], name: str) -> list[str | int | float]:
    """Scalar values of key ``name`` (case-insensitive) anywhere in JSON tool results."""
    found: list[str | int | float] = []

    def walk(node: object) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if (
                    str(key).casefold() == name.casefold()
                    and isinstance(value, (str, int, float))
                    and not isinstance(value, bool)
                ):
                    found.append(value)
                walk(value)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)

    for result in results:
        walk(loads_maybe(result))
    return found


def _states_value(
    answer: str, answer_numbers: EvidenceValues, values: list[str | int | float]
) -> str | None:
    for value in values:
        if isinstance(value, str) and len(value.strip()) >= 2 and contains_phrase(answer, value):
            return value
        if (
            isinstance(value, (int, float))
            and EvidenceValues.of([str(value)]).numbers & answer_numbers.numbers
        ):
            return str(value)
    return None


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
            return Score(
                self.name, 0.0, "no final answer", details={"missing": list(case.expected_fields)}
            )
        answer = trace.final_output
        results = [c.result for c in trace.tool_calls if c.result]
        numbers = EvidenceValues.of([answer])
        how: dict[str, str] = {}
        for name in case.expected_fields:
            phrases = found_phrases(answer, field_phrases(name, self.aliases))
            value = None if phrases else _states_value(answer, numbers, field_values(results, name))
            if phrases or value is not None:
                how[name] = f"alias {phrases[0]!r}" if phrases else f"value {value!r}"
        missing = [name for name in case.expected_fields if name not in how]
        reason = f"{len(how)}/{len(case.expected_fields)} expected field(s) in the answer"
        return Score(
            self.name,
            len(how) / len(case.expected_fields),
            reason + (f"; missing {missing}" if missing else ""),
            details={"found": how, "missing": missing},
        )


@register("completeness")
def _completeness(config: Config) -> Completeness:
    return Completeness(config.field_aliases)
