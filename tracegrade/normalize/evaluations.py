"""Evaluation results recorded with a trace: ``gen_ai.evaluation.result`` log records.

The GenAI semantic conventions define one event for the result of evaluating GenAI output
(``gen_ai.evaluation.result``, semantic-conventions-genai ``model/gen-ai/events.yaml``): a log
record parented to the evaluated GenAI span (its trace and span id) with

- ``gen_ai.evaluation.name`` (required): what was evaluated, e.g. ``relevance``;
- ``gen_ai.evaluation.score.value`` (a double) and/or ``gen_ai.evaluation.score.label`` (a
  low-cardinality reading of it, e.g. ``pass``, ``relevant``, ``thumbs_up``);
- ``gen_ai.evaluation.explanation``: free text;
- ``gen_ai.response.id``: the evaluated completion, when the span id is not known;
- ``error.type``: set when the evaluation itself failed.

Other evaluators (an online judge, end-user feedback, a platform's own scorers) send them to
the receiver with the agent's traces; ``tracegrade score --export-otlp`` sends its own
(:mod:`tracegrade.report.evaluation_signals`). :func:`evaluations_of` reads them from a
trace's log records into :class:`Evaluation` s. A record without ``gen_ai.evaluation.name`` is
not an evaluation result and is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tracegrade.spans import AttrValue, LogRecord

__all__ = [
    "ERROR_TYPE",
    "EVALUATION_EVENT",
    "EXPLANATION",
    "NAME",
    "RESPONSE_ID",
    "SCORE_LABEL",
    "SCORE_VALUE",
    "Evaluation",
    "evaluation_of",
    "evaluations_of",
]

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The event name (``LogRecord.event_name``, or the ``event.name`` attribute of older SDKs)."""
NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"
_OWN = frozenset({NAME, SCORE_VALUE, SCORE_LABEL, EXPLANATION, RESPONSE_ID, ERROR_TYPE})


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One ``gen_ai.evaluation.result`` record (see the module docstring); ids are lowercase
    hex, the time unix nanoseconds."""

    trace_id: str
    span_id: str | None
    """The evaluated span; None when the record names no span (then ``response_id`` may)."""
    name: str
    score_value: float | None
    score_label: str | None
    explanation: str | None
    response_id: str | None
    error_type: str | None
    """Why the evaluation itself failed (``error.type``); None when it did not."""
    time_unix_nano: int
    evaluator: str | None
    """Who sent it: the record's resource ``service.name``, else its instrumentation scope."""
    attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    """The record's other attributes (e.g. ``tracegrade.case_id``, a user id)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, attributes as given (arrays as lists)."""
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "name": self.name,
            "score_value": self.score_value,
            "score_label": self.score_label,
            "explanation": self.explanation,
            "response_id": self.response_id,
            "error_type": self.error_type,
            "time_unix_nano": self.time_unix_nano,
            "evaluator": self.evaluator,
            "attributes": {k: _jsonable(v) for k, v in self.attributes.items()},
        }


def _jsonable(value: AttrValue) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _number(value: AttrValue) -> float | None:
    """A score as recorded: a double (or an int, or a numeric string); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _text(value: AttrValue) -> str | None:
    return None if value is None else str(value)


def evaluation_of(record: LogRecord) -> Evaluation | None:
    """The :class:`Evaluation` of one log record; None when it is not a
    ``gen_ai.evaluation.result`` with a name and a trace id."""
    attrs = record.attributes
    name = attrs.get(NAME)
    if record.event_name != EVALUATION_EVENT or name in (None, "") or not record.trace_id:
        return None
    evaluator = record.resource_attributes.get("service.name") or record.scope_name or None
    return Evaluation(
        trace_id=record.trace_id,
        span_id=record.span_id or None,
        name=str(name),
        score_value=_number(attrs.get(SCORE_VALUE)),
        score_label=_text(attrs.get(SCORE_LABEL)),
        explanation=_text(attrs.get(EXPLANATION)),
        response_id=_text(attrs.get(RESPONSE_ID)),
        error_type=_text(attrs.get(ERROR_TYPE)),
        time_unix_nano=record.sort_time,
        evaluator=_text(evaluator),
        attributes={k: v for k, v in attrs.items() if k not in _OWN and k != "event.name"},
    )


def evaluations_of(records: Iterable[LogRecord]) -> list[Evaluation]:
    """The evaluation results among ``records``, oldest first (see the module docstring)."""
    found = [e for e in map(evaluation_of, records) if e is not None]
    return sorted(found, key=lambda e: e.time_unix_nano)
