"""Trajectory match modes (``tool_calls_match``), argument modes (``arguments_match``),
repeated calls of one tool paired by best match, and nested sub-agents' calls with their
depth (the last from real SDK spans through the normaliser)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.sdk import trace_request
from tests.support.traces import agent, llm, make_case, make_trace, tool
from tracegrade.errors import DatasetError
from tracegrade.normalize import normalize_all
from tracegrade.otlp.codec import spans_from_request
from tracegrade.otlp.files import read_paths
from tracegrade.scoring.tools import ToolArguments, ToolCorrectness
from tracegrade.scoring.trajectory import agent_depths, best_pairs, name_credit

FRAMEWORKS = Path(__file__).parents[1] / "data" / "frameworks"


def names(expected: list[str], actual: list[str], mode: str, **fields: Any):
    case = make_case(expected_tools=expected, tool_calls_match=mode, **fields)
    trace = make_trace(tool_calls=[tool(n, result="ok") for n in actual])
    return ToolCorrectness()(trace, case)


def arguments(expected_calls: list[dict[str, Any]], calls: list[Any], **fields: Any):
    case = make_case(expected_tool_calls=expected_calls, **fields)
    return ToolArguments()(make_trace(tool_calls=calls), case)


# --- tool_calls_match ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "actual", "value"),
    [
        ("exact", ["a", "b"], 1.0),
        ("exact", ["b", "a"], 0.5),  # one in order of two
        ("exact", ["a", "x", "b"], 2 / 3),  # the extra call costs
        ("in_order", ["a", "x", "b"], 1.0),  # calls between are allowed
        ("in_order", ["b", "a"], 0.5),
        ("any_order", ["b", "a"], 1.0),
        ("any_order", ["b", "a", "x"], 2 / 3),  # an extra call costs
        ("any_order", ["a"], 0.5),  # so does a missing one
        ("superset", ["b", "x", "a", "y"], 1.0),  # extras free, any order
        ("superset", ["a"], 0.5),
        ("subset", ["a"], 1.0),  # a missing call is allowed
        ("subset", [], 1.0),
        ("subset", ["a", "a"], 0.5),  # a second call of 'a' is beyond the list
    ],
)
def test_each_match_mode_scores_the_called_names(mode: str, actual: list[str], value: float):
    score = names(["a", "b"], actual, mode)
    assert score.value == pytest.approx(value)
    assert score.details["mode"] == mode
    assert not score.hard_failures


def test_subset_fails_a_call_of_a_tool_outside_the_list_naming_it():
    score = names(["get_order", "cancel_order"], ["get_order", "refund"], "subset")
    assert score.hard_failures == ("called 'refund', outside the expected tools (subset)",)
    assert score.value == 0.5


def test_subset_with_no_expected_tool_means_no_tool_may_be_called():
    assert names([], [], "subset").value == 1.0
    assert names([], ["search"], "subset").hard_failures


@pytest.mark.parametrize("mode", ["exact", "any_order"])
def test_exact_and_any_order_with_nothing_expected_mean_no_tool_call(mode: str):
    """As agentevals' strict and unordered modes with an empty reference trajectory."""
    assert names([], [], mode).value == 1.0
    called = names([], ["search", "refund"], mode)
    assert called.value == 0.0 and not called.hard_failures
    assert called.reason == f"{mode}: no tool call expected, made ['search', 'refund']"


@pytest.mark.parametrize("mode", ["in_order", "superset"])
def test_modes_that_allow_more_with_nothing_expected_do_not_score_names(mode: str):
    assert not names([], ["search"], mode).ran


def test_order_is_the_older_spelling_of_three_modes():
    assert make_case(order="in_order").trajectory_match == "in_order"
    assert make_case(order="exact").trajectory_match == "exact"
    assert make_case().trajectory_match == "superset"
    assert make_case(order="exact", tool_calls_match="exact").trajectory_match == "exact"


def test_name_credit_of_any_order_ignores_order_but_not_count():
    assert name_credit(["a", "a", "b"], ["b", "a", "a"], "any_order")[0] == 1.0
    assert name_credit(["a", "a", "b"], ["b", "a"], "any_order")[0] == pytest.approx(2 / 3)


# --- arguments_match ----------------------------------------------------------------------------

ORDER = {"order_id": "o-1", "reason": "damaged"}


@pytest.mark.parametrize(
    ("mode", "actual", "value"),
    [
        ("superset", {**ORDER, "notify": True}, 1.0),  # the default: extras allowed
        ("superset", {"order_id": "o-1"}, 0.5),  # a stated argument missing
        ("exact", ORDER, 1.0),
        ("exact", {**ORDER, "notify": True}, 2 / 3),  # an argument not stated fails
        ("subset", {"order_id": "o-1"}, 1.0),  # may leave one out
        ("subset", {"order_id": "o-1", "notify": True}, 2 / 3),  # but passes no other
        ("subset", {"order_id": "o-2"}, 0.5),  # and the ones passed hold
        ("ignore", {"anything": 1}, 1.0),
        (["order_id"], {"order_id": "o-1", "reason": "other"}, 1.0),  # only these compared
        (["order_id"], {"order_id": "o-9"}, 0.0),
    ],
)
def test_each_argument_mode(mode: Any, actual: dict[str, Any], value: float):
    expected = [{"name": "return_item", "arguments": ORDER, "arguments_match": mode}]
    score = arguments(expected, [tool("return_item", actual, result="ok")])
    assert score.value == pytest.approx(value)


def test_the_case_sets_the_default_argument_mode_and_a_call_overrides_it():
    calls = [tool("return_item", {"order_id": "o-1"}, result="ok")]
    expected = [{"name": "return_item", "arguments": ORDER}]
    assert arguments(expected, calls, arguments_match="subset").value == 1.0
    assert arguments(expected, calls, arguments_match="superset").value == 0.5
    overridden = [{**expected[0], "arguments_match": "superset"}]
    assert arguments(overridden, calls, arguments_match="subset").value == 0.5


def test_allow_extra_arguments_false_is_exact():
    expected = [{"name": "f", "arguments": {"a": 1}, "allow_extra_arguments": False}]
    assert arguments(expected, [tool("f", {"a": 1, "b": 2}, result="ok")]).value == 0.5


# --- repeated calls of one tool: paired by best match, not by order ----------------------------


def test_repeated_calls_are_paired_by_match_not_by_order():
    expected = [
        {"name": "search", "arguments": {"q": "sony"}},
        {"name": "search", "arguments": {"q": "bose"}},
    ]
    calls = [tool("search", {"q": "bose"}, result="ok"), tool("search", {"q": "sony"}, result="ok")]
    assert arguments(expected, calls).value == 1.0


def test_the_assignment_maximises_the_credit_over_all_pairs():
    # both calls fully match the first expected call, only one the second: pairing the first
    # expected call with the first call it matches (by order) would leave the second at 1/4
    expected = [
        {"name": "f", "arguments": {"a": 1, "b": 1}},
        {"name": "f", "arguments": {"a": 1, "b": 1, "c": 1, "d": 1}},
    ]
    calls = [
        tool("f", {"a": 1, "b": 1, "c": 1, "d": 1}, result="ok"),
        tool("f", {"a": 1}, result="ok"),
    ]
    score = arguments(expected, calls)
    assert score.value == pytest.approx((1.0 + 0.5) / 2)
    assert [c["credit"] for c in score.details["calls"]] == [0.5, 1.0]


def test_best_pairs_prefers_full_matches_then_partial_credit_then_earlier_calls():
    weights = {(0, 0): (False, 0.9), (0, 1): (True, 1.0), (1, 0): (True, 1.0), (1, 1): (False, 0.1)}
    pairs = best_pairs(["f", "f"], ["f", "f"], lambda i, j: weights[(i, j)])
    assert pairs == {0: 1, 1: 0}
    assert best_pairs(["f"], ["f", "f"], lambda i, j: (True, 1.0)) == {0: 0}
    assert best_pairs(["f"], ["g"], lambda i, j: (True, 1.0)) == {}


_names = st.lists(st.sampled_from("fg"), max_size=5)
_weights = st.lists(st.tuples(st.booleans(), st.integers(0, 4)), min_size=25, max_size=25)


def _objective(pairs, weights):
    """What the assignment maximises: full matches first, then pairs plus predicate credit."""
    full = sum(weights[i][j][0] for i, j in pairs.items())
    return full, sum(1 + weights[i][j][1] for i, j in pairs.items())


@settings(max_examples=300, deadline=None)
@given(_names, _names, _weights)
def test_best_pairs_finds_the_optimum_scipy_finds(expected, made, flat):
    """Against scipy's linear_sum_assignment (the reference solver) on the same objective."""
    linear_sum_assignment = pytest.importorskip("scipy.optimize").linear_sum_assignment
    weights = {
        i: {j: (full, 1.0 if full else quarters / 4) for j, (full, quarters) in enumerate(row)}
        for i, row in enumerate(flat[k : k + 5] for k in range(0, 25, 5))
    }
    pairs = best_pairs(expected, made, lambda i, j: weights[i][j])
    assert len(set(pairs.values())) == len(pairs)  # one expected call per call
    assert all(expected[i] == made[j] for i, j in pairs.items())
    matrix = [
        [
            (100.0 * weights[i][j][0] + 1 + weights[i][j][1]) if expected[i] == made[j] else 0.0
            for j in range(len(made))
        ]
        for i in range(len(expected))
    ]
    reference = {}
    if expected and made:
        rows, cols = linear_sum_assignment(matrix, maximize=True)
        reference = {int(i): int(j) for i, j in zip(rows, cols, strict=True) if matrix[i][j] > 0}
    assert _objective(pairs, weights) == _objective(reference, weights)


def test_subset_counts_only_the_expected_calls_made_and_makes_every_listed_tool_strict():
    expected = [
        {"name": "get_order", "arguments": {"order_id": "o-1"}},
        {"name": "cancel_order", "arguments": {"order_id": "o-1"}},
    ]
    made = [tool("get_order", {"order_id": "o-1"}, result="ok")]
    score = arguments(expected, made, tool_calls_match="subset")
    assert score.value == 1.0 and not score.hard_failures
    wrong = [*made, tool("get_order", {"order_id": "o-2"}, result="ok")]
    score = arguments(expected, wrong, tool_calls_match="subset")
    assert score.hard_failures == ('unexpected call get_order({"order_id": "o-2"})',)


# --- nested sub-agents --------------------------------------------------------------------------


def _tool_span(tracer: Any, name: str, args: dict[str, Any]) -> Any:
    return tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": json.dumps({"ok": True}),
        },
    )


def _agent_span(tracer: Any, name: str) -> Any:
    return tracer.start_as_current_span(
        f"invoke_agent {name}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
    )


def _agent_as_a_tool(tracer: Any) -> None:
    """The shop agent searches, then calls a research agent as a tool, which searches too."""
    with _agent_span(tracer, "shop"):
        with _tool_span(tracer, "search", {"q": "laptop"}):
            pass
        with _tool_span(tracer, "research", {"topic": "laptop"}), _agent_span(tracer, "researcher"):
            with _tool_span(tracer, "search", {"q": "laptop reviews"}):
                pass
            with _tool_span(tracer, "read_page", {"url": "https://example.com/r"}):
                pass


@pytest.fixture(scope="module")
def nested():
    (trace,) = normalize_all(spans_from_request(trace_request(_agent_as_a_tool)))
    return trace


def test_nested_sub_agent_calls_count_with_their_depth(nested):
    case = make_case(expected_tools=["search", "research", "search", "read_page"])
    score = ToolCorrectness()(nested, case)
    assert score.value == 1.0
    assert score.details["actual"] == ["search", "research", "search", "read_page"]
    assert score.details["depths"] == [0, 0, 1, 1]


def test_a_case_can_match_the_top_level_agent_only(nested):
    case = make_case(
        expected_tools=["search", "research"],
        tool_calls_match="exact",
        tool_calls_scope="top_level",
    )
    score = ToolCorrectness()(nested, case)
    assert score.value == 1.0 and score.details["depths"] == [0, 0]
    everything = make_case(expected_tools=["search", "research"], tool_calls_match="exact")
    assert ToolCorrectness()(nested, everything).value == 0.5  # the sub-agent's calls are extras


def test_the_top_level_scope_leaves_sub_agent_arguments_out(nested):
    expected = [{"name": "search", "arguments": {"q": "laptop reviews"}}]
    top = make_case(expected_tool_calls=expected, tool_calls_scope="top_level")
    assert ToolArguments()(nested, top).value == 0.0  # the top level searched for "laptop"
    assert ToolArguments()(nested, make_case(expected_tool_calls=expected)).value == 1.0


def test_agent_depths_count_the_acting_agents_above():
    calls = [tool("t", agent_span_id=s) for s in ("s1", "s2", "s3")]
    trace = make_trace(
        agents=[agent("a", "s1"), agent("b", "s2", parent="s1"), agent("c", "s3", parent="s2")],
        tool_calls=calls,
    )
    assert agent_depths(trace) == {"s1": 0, "s2": 1, "s3": 2}
    cycle = make_trace(agents=[agent("a", "s1", parent="s2"), agent("b", "s2", parent="s1")])
    assert set(agent_depths(cycle)) == {"s1", "s2"}  # a malformed cycle does not hang


def test_an_agent_span_that_does_not_act_adds_no_depth():
    """A workflow or task span around the agent (no LLM or tool call of its own) wraps it."""
    trace = make_trace(
        agents=[
            agent("workflow", "w"),
            agent("shop", "s", parent="w"),
            agent("researcher", "r", parent="s"),
        ],
        llm_calls=[llm(agent_span_id="s")],
        tool_calls=[tool("search", agent_span_id="r")],
    )
    assert agent_depths(trace) == {"w": 0, "s": 0, "r": 1}


def _wrapped_agent_as_a_tool(tracer: Any) -> None:
    with _agent_span(tracer, "workflow"):
        _agent_as_a_tool(tracer)


def test_a_workflow_span_around_the_agents_keeps_their_depths():
    (trace,) = normalize_all(spans_from_request(trace_request(_wrapped_agent_as_a_tool)))
    score = ToolCorrectness()(trace, make_case(expected_tools=["search"]))
    assert score.details["depths"] == [0, 0, 1, 1]


@pytest.mark.parametrize(
    "setup", ["openai-agents-mcp", "js-openai-agents-openinference", "crewai-openllmetry"]
)
def test_recorded_frameworks_wrapping_their_one_agent_call_its_tools_at_top_level(setup):
    """The OpenAI Agents SDK's ``Agent workflow`` span and CrewAI's crew and task spans are
    agent spans around the one agent that acts: its calls are the top level's."""
    payloads = read_paths([FRAMEWORKS / setup / "traces.binpb.gz"])
    traces = normalize_all(payloads.spans(), payloads.log_records())
    assert any(len(t.agents) >= 2 for t in traces)  # the wrapper is read as an agent
    depths = []
    for trace in (t for t in traces if t.tool_calls):
        names = [c.name for c in trace.tool_calls]
        case = make_case(expected_tools=names, tool_calls_match="exact")
        top = make_case(
            expected_tools=names, tool_calls_match="exact", tool_calls_scope="top_level"
        )
        score = ToolCorrectness()(trace, case)
        depths += score.details["depths"]
        assert ToolCorrectness()(trace, top).details["actual"] == score.details["actual"]
    assert depths and set(depths) == {0}


# --- located errors -----------------------------------------------------------------------------


def _load(tmp_path, text: str) -> str:
    from tracegrade.dataset import load_dataset

    path = tmp_path / "modes.yaml"
    path.write_text(text)
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    return str(caught.value)


def test_a_bad_mode_names_the_file_line_and_field(tmp_path):
    message = _load(
        tmp_path,
        "- input: hi\n"
        "  tool_calls_match: sometimes\n"
        "  expected_tool_calls:\n"
        "    - name: f\n"
        "      arguments: {a: 1}\n"
        "      arguments_match: [b]\n",
    )
    assert f"{tmp_path / 'modes.yaml'}:2: case 1: field 'tool_calls_match'" in message
    assert "'exact', 'in_order', 'any_order', 'subset' or 'superset'" in message
    assert ":4: case 1: field 'expected_tool_calls.0': " in message
    assert "arguments_match names ['b'], which 'arguments' does not state" in message


def test_order_and_tool_calls_match_that_disagree_are_an_error(tmp_path):
    message = _load(tmp_path, "- input: hi\n  order: exact\n  tool_calls_match: subset\n")
    assert "order: exact contradicts tool_calls_match: subset" in message


def test_allow_extra_arguments_that_contradicts_the_mode_is_an_error(tmp_path):
    message = _load(
        tmp_path,
        "- input: hi\n  expected_tool_calls:\n    - name: f\n      allow_extra_arguments: true\n"
        "      arguments_match: exact\n",
    )
    assert "allow_extra_arguments: true contradicts arguments_match: exact" in message
