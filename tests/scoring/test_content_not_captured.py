"""Traces without message content (an instrumentation's default, issue 35): what can be scored
from spans alone is scored (tool names and order, forbidden tools, errors, budgets), what needs
content is not scored and says why, and no rate reads 0% for lack of data."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tests.support.traces import TRACE_ID, gap, llm, make_case, make_dataset, make_trace, tool
from tracegrade.report.console import print_report
from tracegrade.report.document import document
from tracegrade.scoring import build_scorers, evaluate
from tracegrade.scoring.evaluation import CASE_ID_ATTR

HINT = "message content not captured: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"


def contentless(case_id, *, tools=(), finish_tools=None, trace_id=TRACE_ID):
    """A trace of case ``case_id`` (``tracegrade.case_id``, as ``tracegrade run`` labels it) as
    the GenAI instrumentation records it by default: LLM spans with usage and finish reasons,
    tool spans with names only, no messages."""
    calls = list(tools)
    asked = finish_tools if finish_tools is not None else bool(calls)
    return make_trace(
        trace_id=trace_id,
        root_attributes={CASE_ID_ATTR: case_id},
        user_inputs=(),
        final_output=None,
        tool_calls=calls,
        llm_calls=[llm(tool_call_ids=("c1",) if asked else (), input_tokens=10, output_tokens=5)],
        gaps=[gap("message_content", HINT), gap("final_output", HINT)]
        + ([] if calls else [gap("tool_calls", "no tool spans and no LLM output content")]),
    )


@pytest.fixture
def scorers(config):
    return build_scorers(config, with_plugins=False)


def test_tool_names_are_scored_and_arguments_are_not_without_content(config, scorers):
    case = make_case(
        id="lima",
        input="weather in Lima?",
        expected_tool_calls=[{"name": "get_weather", "arguments": {"city": "Lima"}}],
    )
    trace = contentless("lima", tools=[tool("get_weather", None, arguments_recorded=False)])
    [result] = evaluate([trace], make_dataset(case), scorers, config).results
    assert result.scores["tool_correctness"] == 1.0
    assert result.scores["tool_arguments"] is None  # unknown, not 0
    assert result.passed and result.notes[0] == HINT


def test_no_tool_span_and_a_stop_finish_shows_no_tool_was_called(config, scorers):
    """A case that forbids a tool is scored: the LLM call finished with ``stop``."""
    case = make_case(id="no-city", input="sunny?", forbidden_tools=["get_weather"])
    [result] = evaluate([contentless("no-city")], make_dataset(case), scorers, config).results
    assert result.scores["tool_correctness"] == 1.0
    assert result.passed and "no weighted axis could be scored" not in result.reasons


def test_a_tool_call_finish_without_tool_spans_stays_unknown(config, scorers):
    case = make_case(id="no-city", input="sunny?", forbidden_tools=["get_weather"])
    trace = contentless("no-city", finish_tools=True)
    [result] = evaluate([trace], make_dataset(case), scorers, config).results
    assert result.scores["tool_correctness"] is None


def test_an_answer_only_case_is_scored_on_errors_and_budgets(config, scorers):
    case = make_case(id="c", input="q", must_contain=["rain"], max_tool_calls=3)
    trace = contentless("c", tools=[tool("get_weather", None, arguments_recorded=False)])
    [result] = evaluate([trace], make_dataset(case), scorers, config).results
    assert result.score == 1.0 and result.passed
    assert "no weighted axis could be scored" not in result.reasons
    assert any(n.startswith("scored on errors and budgets only") for n in result.notes)


def test_the_hallucination_rate_is_unknown_when_no_trace_can_tell(config, scorers):
    case = make_case(id="c", input="q", must_contain=["rain"])
    run = evaluate([contentless("c")], make_dataset(case), scorers, config)
    assert run.summary.hallucination_rate is None


def _report(run, verbose=False) -> str:
    out = io.StringIO()
    doc = document(run, [], None, trace_source="test", config_files=())
    print_report(doc, verbose=verbose, console=Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_the_console_says_content_is_missing_first_and_on_each_case(config, scorers):
    cases = [
        make_case(id="paris", input="q1", expected_tools=["get_weather"]),
        make_case(id="no-city", input="q2", forbidden_tools=["get_weather"]),
    ]
    traces = [
        contentless("paris", tools=[tool("get_weather", None, arguments_recorded=False)]),
        contentless("no-city", trace_id=f"{2:032x}"),
    ]
    run = evaluate(traces, make_dataset(*cases), scorers, config)
    text = _report(run)
    lines = text.splitlines()
    assert lines[1].startswith("2 of 2 case(s): " + HINT)  # right under the header, once
    assert text.count("tool names and order, call counts, budgets and errors") == 1
    table = text[text.index("cases without message content") :]
    assert table.count(HINT) == 2  # on each case's line, though both passed
    words = " ".join(text.split())
    assert "hallucination rate n/a" in words and " 0%" not in words
