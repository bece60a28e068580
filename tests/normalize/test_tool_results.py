"""Issue 10 item 11: a Python object repr recorded as a tool result is not the result.

Data: ``tests/data/agent-framework/object-result``, a real Microsoft Agent Framework 1.23 run
(recorded by ``record.py`` there with the OpenTelemetry SDK's OTLP encoder) whose ``think``
tool returns ``""`` and whose ``get_seat_map`` tool returns an image: Agent Framework records
both results as ``[<agent_framework._types.Content object at 0x...>]``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracegrade.normalize import normalize_all
from tracegrade.normalize.lint import lint
from tracegrade.normalize.results import choose_result, is_object_repr
from tracegrade.otlp.files import read_paths
from tracegrade.scoring.grounding import evidence_texts
from tracegrade.spans import LogRecord, Span
from tracegrade.trace import AgentTrace

RUN = Path(__file__).parents[1] / "data" / "agent-framework" / "object-result"


def _load() -> tuple[list[Span], list[LogRecord]]:
    payloads = read_paths([RUN / "traces.binpb"])
    assert payloads.errors == []
    return payloads.spans(), payloads.log_records()


def _trace(spans: list[Span], logs: list[LogRecord]) -> AgentTrace:
    (trace,) = normalize_all(spans, logs)
    return trace


def test_the_recording_holds_reprs_in_place_of_results():
    spans, _ = _load()
    recorded = [s.attributes.get("gen_ai.tool.call.result") for s in spans]
    assert sum(is_object_repr(r) for r in recorded) == 2


def test_a_repr_is_replaced_by_the_result_the_next_llm_call_received():
    trace = _trace(*_load())
    assert [(c.name, c.result, c.result_unavailable) for c in trace.tool_calls] == [
        ("think", "", None),
        ("get_flight_status", "on time", None),
        ("get_seat_map", "", None),
    ]
    assert trace.gap("tool_results") is None


@pytest.fixture
def cut_after_last_tool() -> AgentTrace:
    """The same run cut after its last tool call (no LLM call received that result)."""
    spans, logs = _load()
    last_chat = max(
        (s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_unix_nano
    )
    return _trace(
        [s for s in spans if s is not last_chat],
        [r for r in logs if r.span_id != last_chat.span_id],
    )


def test_a_repr_alone_leaves_the_result_unavailable_and_says_why(cut_after_last_tool):
    seat_map = cut_after_last_tool.tool_calls[-1]
    assert (seat_map.name, seat_map.result) == ("get_seat_map", None)
    assert seat_map.result_unavailable is not None and "repr" in seat_map.result_unavailable
    gap = cut_after_last_tool.gap("tool_results")
    assert gap is not None and "1 of 3 tool call(s) have no usable result" in gap.reason
    assert "Python object repr" in gap.reason


def test_lint_reports_the_repr(cut_after_last_tool):
    check = next(c for c in lint(cut_after_last_tool).checks if c.input == "tool_results")
    assert check.status == "partial" and "Python object repr" in check.detail


def test_a_repr_is_never_grounding_evidence(cut_after_last_tool):
    assert not any("object at 0x" in text for text in evidence_texts(cut_after_last_tool))


@pytest.mark.parametrize(
    "text",
    [
        "[<agent_framework._types.Content object at 0x7f2dbeb65350>]",
        "<agent_framework._types.Content object at 0x7F2DBEB65350>",
        "[<a.B object at 0x1>, <a.C object at 0x2>]",
        "<function tool at 0x7f00aa>",
    ],
)
def test_reprs_are_recognised(text):
    assert is_object_repr(text)


@pytest.mark.parametrize(
    "text", ["", "[]", "on time", "see <a.B object at 0x1> for details", "0x7f2dbeb65350"]
)
def test_content_is_not_a_repr(text):
    assert not is_object_repr(text)


def test_choose_result_prefers_the_first_usable_record():
    assert choose_result("<a.B object at 0x1>", "ok") == ("ok", None)
    assert choose_result(None, None) == (None, None)
