"""The runner's pieces one at a time: argument kinds, templates, environment, settling,
repeats, case selection, option checks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.resources import OTELResourceDetector

from tests.runner.conftest import CASES, run_cli, write_dataset
from tracegrade.dataset import Case, load_dataset, select_cases
from tracegrade.errors import ConfigError
from tracegrade.runner.agents import (
    AgentFailure,
    argument_kind,
    parse_body,
    render_body,
    reply_from_response,
    reply_text,
)
from tracegrade.runner.agents.base import error_line
from tracegrade.runner.execute import FinishedAttempt, merge_traces
from tracegrade.runner.results import combine
from tracegrade.runner.settle import SettleRule, is_settled
from tracegrade.runner.telemetry import resource_attributes_env
from tracegrade.scoring.results import CaseResult
from tracegrade.spans import Span, TraceData
from tracegrade.store.runs import run_headers
from tracegrade.store.traces import Store, TraceState


def text_only(message: str) -> str: ...
def messages_only(messages: list[dict[str, str]]) -> str: ...
def sequence_only(messages: Sequence[dict[str, Any]]) -> str: ...
def both(message: str | Sequence[dict[str, Any]]) -> str: ...
def bare(message): ...  # noqa: ANN001


@pytest.mark.parametrize(
    ("function", "kind"),
    [
        (text_only, "text"),
        (messages_only, "messages"),
        (sequence_only, "messages"),
        (both, "either"),
        (bare, "either"),
    ],
)
def test_the_first_parameters_annotation_decides_what_the_agent_gets(function, kind) -> None:
    assert argument_kind(function) == kind


def test_an_agent_without_a_parameter_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="must take the user message"):
        argument_kind(lambda: "hi")


def test_body_template_fills_input_messages_and_ids() -> None:
    template = parse_body(
        '{"q": "{input}", "history": "{messages}", "meta": {"id": "case {case_id}"}, "n": 1}'
    )
    messages = [{"role": "user", "content": 'say "hi"'}]
    body = render_body(
        template,
        {"input": 'say "hi"', "case_id": "c1", "conversation_id": "x", "messages": "[]"},
        messages,
    )
    assert body == {"q": 'say "hi"', "history": messages, "meta": {"id": "case c1"}, "n": 1}
    with pytest.raises(ConfigError, match="not JSON"):
        parse_body("{message: {input}}")
    with pytest.raises(ConfigError, match="must contain"):
        parse_body('{"message": "hello"}')


def test_replies_from_responses_and_return_values() -> None:
    request = httpx.Request("POST", "http://agent")
    assert (
        reply_from_response(httpx.Response(200, json={"output": "hi"}, request=request), None)
        == "hi"
    )
    assert (
        reply_from_response(
            httpx.Response(200, json={"data": {"text": "yo"}}, request=request), "data.text"
        )
        == "yo"
    )
    assert reply_from_response(httpx.Response(200, text="plain", request=request), None) == "plain"
    with pytest.raises(AgentFailure, match="no field 'data.answer'"):
        reply_from_response(httpx.Response(200, json={"data": {}}, request=request), "data.answer")
    assert reply_text({"content": "a"}) == "a" and reply_text(None) == "" and reply_text(3) == "3"


def test_resource_attributes_are_appended_and_encoded_for_every_sdk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    value = resource_attributes_env(
        "service.version=1.2, ", {"tracegrade.run_id": "r#2", "tracegrade.case_id": "shop:1,a=b"}
    )
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", value)
    attributes = OTELResourceDetector().detect().attributes
    assert attributes["service.version"] == "1.2"
    assert (
        attributes["tracegrade.run_id"] == "r#2"
        and attributes["tracegrade.case_id"] == "shop:1,a=b"
    )
    assert resource_attributes_env(None, {"k": "v"}) == "k=v"


def _state(ended: bool, spans: int, last: float) -> TraceState:
    return TraceState("t", "r", "c", ended, spans, 0.0, last)


def test_settling_rules() -> None:
    in_process = SettleRule(quiet_s=0.0, require_ended=True, min_spans=1)
    assert is_settled([_state(True, 3, 10.0)], in_process, now=10.0)
    assert not is_settled([_state(False, 3, 10.0)], in_process, now=11.0)
    service = SettleRule(quiet_s=1.0, min_spans=2)
    assert not is_settled(
        [_state(True, 1, 10.0)], service, now=20.0
    )  # only the runner's own root span
    assert not is_settled([_state(True, 4, 10.0)], service, now=10.5)
    assert is_settled([_state(True, 4, 10.0)], service, now=11.0)
    assert not is_settled([], SettleRule(), now=99.0)


def test_traces_of_one_conversation_merge_into_one() -> None:
    def span(trace_id: str, span_id: str) -> Span:
        return Span(trace_id, span_id, None, "s", 1, 0, 1)

    merged = merge_traces([TraceData("a", [span("a", "1")]), TraceData("b", [span("b", "2")])])
    assert merged.trace_id == "a" and [s.span_id for s in merged.spans] == ["1", "2"]


def _outcome(repeat: int, passed: bool, score: float | None) -> FinishedAttempt:
    result = CaseResult("c", f"t{repeat}", passed, score, {}, (f"r{repeat}",))
    return FinishedAttempt(
        Case(id="c", input="x"), repeat, result, (f"t{repeat}",), None, None, 1.0
    )


def test_repeats_take_the_median_score_and_the_median_repeats_verdict() -> None:
    combined = combine([_outcome(1, True, 0.9), _outcome(2, False, 0.3), _outcome(3, True, 0.8)])
    assert combined.passed and combined.score == 0.8 and combined.trace_id == "t3"
    two = combine([_outcome(1, True, 0.9), _outcome(2, False, 0.4)])
    assert not two.passed and two.score == pytest.approx(
        0.65
    )  # even: the lower median repeat decides
    assert combine([_outcome(1, False, None), _outcome(2, False, 0.2)]).score == 0.2


def test_case_selection_by_tier_tags_and_ids(tmp_path: Path) -> None:
    dataset = load_dataset(
        write_dataset(
            tmp_path / "d.yaml", [*CASES, {"id": "other", "input": "x", "tags": ["misc"]}]
        )
    )
    assert [c.id for c in select_cases(dataset, "smoke", (), ())] == ["sony-price"]
    assert [c.id for c in select_cases(dataset, None, ("misc,nothing",), ())] == ["other"]
    assert [c.id for c in select_cases(dataset, None, ("price",), ("bose-price",))] == [
        "bose-price"
    ]
    with pytest.raises(ConfigError, match="--case nope: no such case"):
        select_cases(dataset, None, (), ("nope",))
    with pytest.raises(ConfigError, match="no case selected"):
        select_cases(dataset, "smoke", ("misc",), ())


@pytest.mark.parametrize("args", [(), ("--agent", "a:b", "--agent-url", "http://x")])
def test_exactly_one_agent_option(dataset, tmp_path: Path, args: tuple[str, ...]) -> None:
    ran = run_cli(tmp_path, dataset, *args)
    assert ran.exit_code == 2 and "give exactly one of --agent" in ran.stderr


def test_a_bad_agent_reference_is_a_usage_error(dataset, tmp_path: Path) -> None:
    ran = run_cli(tmp_path, dataset, "--agent", "no_such_module_xyz:answer")
    assert ran.exit_code == 2 and "cannot import no_such_module_xyz" in ran.stderr


def test_without_a_store_the_run_is_stored_where_score_stores_it(
    model, dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27, defect 10: a plain ``run`` kept nothing while ``score`` wrote
    ``.tracegrade/``. Now both store in the default store and say where; ``--no-save`` keeps
    nothing (its traces go to a temporary store)."""
    monkeypatch.delenv("TRACEGRADE_DB")
    args = ("--agent", "tests.runner.shop_agent:answer", "--smoke")
    skipped = run_cli(tmp_path, dataset, *args, "--no-save")
    assert skipped.exit_code == 0 and not (tmp_path / ".tracegrade").exists()
    assert "stored in" not in skipped.stdout
    ran = run_cli(tmp_path, dataset, *args)
    assert ran.exit_code == 0, ran.stderr
    run_id = ran.doc["run"]["run_id"]
    store = Path(".tracegrade") / "tracegrade.db"
    assert f"run {run_id} stored in {store}" in " ".join(ran.stdout.split())
    with Store(str(tmp_path / store)) as opened:
        (head,) = run_headers(opened)
        assert head["run"]["run_id"] == run_id
        traces = opened.trace_ids()
    assert traces and set(traces) >= {c["trace_id"] for c in ran.doc["cases"]}


PYTHON_TRACEBACK = """Traceback (most recent call last):
  File "agent.py", line 9, in <module>
    main()
  File "agent.py", line 5, in main
    raise ValueError("no such order: 42")
ValueError: no such order: 42
"""
NODE_STACK = """/srv/agent.js:3
  throw new TypeError("reply is undefined");
  ^

TypeError: reply is undefined
    at Object.<anonymous> (/srv/agent.js:3:9)
    at node:internal/main/run_main_module:28:49

Node.js v20.11.0
"""


@pytest.mark.parametrize(
    ("stderr", "line"),
    [
        (PYTHON_TRACEBACK, "ValueError: no such order: 42"),
        (NODE_STACK, "TypeError: reply is undefined"),
        ("panic: runtime error: index out of range\n\ngoroutine 1 [running]:\n", None),
        ("warming up\nshop agent: cannot reach the catalogue\n", None),
        ("   \n", None),
    ],
)
def test_the_error_line_of_an_agents_stderr(stderr: str, line: str | None) -> None:
    expected = {
        "panic": "panic: runtime error: index out of range",
        "warming": "shop agent: cannot reach the catalogue",
    }
    want = line or next((v for k, v in expected.items() if stderr.startswith(k)), None)
    assert error_line(stderr) == want


def test_a_receiver_port_in_use_is_a_usage_error(dataset, tmp_path: Path) -> None:
    """``run --otlp-http-port N`` (a fixed port for --agent-url services) on a taken port
    printed a traceback; now one clear line, exit 2."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        args = ("--agent", "tests.runner.shop_agent:answer", "--otlp-http-port", port)
        ran = run_cli(tmp_path, dataset, *args)
    assert ran.exit_code == 2
    stated = (
        f"cannot start the run's OTLP receiver: cannot bind the OTLP/HTTP port 127.0.0.1:{port}"
    )
    assert stated in ran.stderr and "the port is in use" in ran.stderr
