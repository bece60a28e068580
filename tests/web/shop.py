"""A real trace store for the web tests: two ``tracegrade run`` runs of the example shop agent
(examples/ecommerce) against its golden dataset's smoke tier, with the scripted model playing
a good model and the ``invented_price`` regression, plus a hostile trace (XSS payloads in the
user's input, the answer, a tool argument and a tool result; recorded by the OpenTelemetry
SDK) scored by ``tracegrade score`` against a dataset whose case input is the payload too; a
two-turn support conversation (two traces linked by ``gen_ai.conversation.id``, service
``support-agent``) whose first turn has a tool call that fails by status and one whose result
reports an error, and a Markdown answer; and a run scored from a trace file with ``--db``
(``score FILE --db``: the run is stored, its trace is not)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.support.ecommerce_model import ecommerce_model
from tests.support.openai_server import ScriptedOpenAI, json_reply
from tests.support.sdk import record
from tracegrade.cli import cli
from tracegrade.store.traces import Store

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "datasets" / "ecommerce" / "golden.yaml"
AGENT = "examples.ecommerce.agent:answer"

XSS_INPUT = "<script>window.__xss='input'</script> find <b>cheap</b> headphones"
XSS_ANSWER = (
    "Try <img src=x onerror=\"window.__xss='answer'\"> and <script>window.__xss='a2'</script>"
)
XSS_ARGUMENT = "<svg onload=\"window.__xss='argument'\">"
XSS_RESULT = (
    '<a id="evil" href="javascript:window.__xss=\'result\'">click</a>'
    "<script>window.__xss='r2'</script>"
)
PAYLOADS = (XSS_INPUT, XSS_ANSWER, XSS_ARGUMENT, XSS_RESULT)


@dataclass(frozen=True)
class ShopStore:
    """Where the data is: the store file, the runs by label, the XSS trace and datasets."""

    db: Path
    good_run: str
    bad_run: str
    judged_run: str
    """The clarification and multi-turn cases, judged."""
    xss_run: str
    xss_trace: str
    golden: Path
    """A copy of the golden dataset (tests edit copies of it, never the repo's)."""
    xss_dataset: Path
    support_traces: list[str]
    """The two turns of the support conversation, oldest first."""
    file_run: str
    """Scored from a trace file: its trace is not in the store."""


@contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run(
    db: Path, variant: str, out: Path, dataset: Path = GOLDEN, *extra: str, label: str = ""
) -> str:
    with ScriptedOpenAI(ecommerce_model(variant)) as server:  # type: ignore[arg-type]
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
        with _env(**env, OPENAI_MODEL="gpt-4o-mini"):
            tier = ["--smoke"] if dataset == GOLDEN else []
            args = ["run", str(dataset), "--agent", AGENT, *tier, "--concurrency", "4"]
            args += ["--db", str(db), "--label", label or variant, "--json", str(out), *extra]
            result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return str(json.loads(out.read_text())["run"]["run_id"])


JUDGE_REASONING = "Confirms the order. <script>window.__xss='judge'</script>"


def _judged_run(db: Path, root: Path) -> str:
    """The good model on the clarification and multi-turn cases, with an LLM judge rubric on
    the clarification case (the scripted judge's reasoning carries an XSS payload)."""
    golden = yaml.safe_load(GOLDEN.read_text())
    keep = {"cancel-which-order", "running-shoes-multi-turn"}
    cases = [c for c in golden["cases"] if c["id"] in keep]
    for case in cases:
        if case["id"] == "cancel-which-order":
            case["judge"] = {
                "rubric": "The answer says which order was cancelled.",
                "threshold": 0.5,
            }
    dataset = root / "judged.yaml"
    dataset.write_text(yaml.safe_dump({**golden, "name": "judged", "cases": cases}))
    verdict = {"reasoning": JUDGE_REASONING, "score": 0.9, "met": ["order named"], "missed": []}
    out = root / "judged.json"
    with ScriptedOpenAI(lambda body: json_reply(verdict)) as judge:
        env = {"TRACEGRADE_JUDGE_BASE_URL": judge.base_url, "TRACEGRADE_JUDGE_API_KEY": "test"}
        with _env(**env):
            return _run(
                db,
                "good",
                out,
                dataset,
                "--judge-model",
                "judge-model",
                "--judge-repeat",
                "2",
                label="judged",
            )


def _hostile_turn(tracer) -> None:  # type: ignore[no-untyped-def]
    def messages(role: str, text: str) -> str:
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    with tracer.start_as_current_span(
        "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "execute_tool search",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": json.dumps({"q": XSS_ARGUMENT}),
                "gen_ai.tool.call.result": XSS_RESULT,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.output_tokens": 7,
                "gen_ai.input.messages": messages("user", XSS_INPUT),
                "gen_ai.output.messages": messages("assistant", XSS_ANSWER),
            },
        ):
            pass


def _hostile(db: Path, root: Path) -> tuple[str, str, Path]:
    request = encode_spans(record(_hostile_turn))
    with Store(db) as store:
        store.add_traces(request)
        (trace_id,) = store.trace_ids()[:1]
    dataset = root / "hostile.yaml"
    case = {"id": "xss-case", "input": XSS_INPUT, "expected_tools": ["search"]}
    dataset.write_text(yaml.safe_dump({"name": "hostile", "cases": [case]}, sort_keys=False))
    out = root / "hostile.json"
    args = ["score", "--db", str(db), "--dataset", str(dataset), "--json", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return str(json.loads(out.read_text())["run"]["run_id"]), trace_id, dataset


CONVERSATION_ID = "conv-support-1"
SUPPORT_ANSWER = (
    "**Sorry**, I could not find order `1234`.\n\n- check the number\n"
    "- see [the help page](https://example.com/help)"
)


def _messages(role: str, *parts: dict[str, object]) -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


def _text(content: str) -> dict[str, object]:
    return {"type": "text", "content": content}


def _call(call_id: str, order_id: str) -> dict[str, object]:
    arguments = {"order_id": order_id}
    return {"type": "tool_call", "id": call_id, "name": "get_order", "arguments": arguments}


def _chat(tracer, history: list[dict[str, object]], *output: dict[str, object]) -> None:  # type: ignore[no-untyped-def]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": CONVERSATION_ID,
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 8,
        "gen_ai.input.messages": json.dumps(history),
        "gen_ai.output.messages": _messages("assistant", *output),
    }
    with tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
        pass


def _get_order(tracer, call_id: str, order_id: str, result: str, error: str | None = None) -> None:  # type: ignore[no-untyped-def]
    from opentelemetry.trace import Status, StatusCode

    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_order",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps({"order_id": order_id}),
        "gen_ai.tool.call.result": result,
    }
    with tracer.start_as_current_span("execute_tool get_order", attributes=attributes) as span:
        if error:
            span.set_status(Status(StatusCode.ERROR, error))


def _support_turn_1(tracer) -> None:  # type: ignore[no-untyped-def]
    user = {"role": "user", "parts": [_text("Where is my order 1234?")]}
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": CONVERSATION_ID}
    with tracer.start_as_current_span("invoke_agent support", attributes=agent):
        _chat(tracer, [user], _call("c1", "1234"))
        _get_order(tracer, "c1", "1234", "", error="upstream timeout after 5 s")
        _chat(tracer, [user], _call("c2", "1234"))
        _get_order(tracer, "c2", "1234", json.dumps({"error": "order 1234 not found"}))
        _chat(tracer, [user], _text(SUPPORT_ANSWER))


def _support_turn_2(tracer) -> None:  # type: ignore[no-untyped-def]
    history = [
        {"role": "user", "parts": [_text("Where is my order 1234?")]},
        {"role": "assistant", "parts": [_text(SUPPORT_ANSWER)]},
        {"role": "user", "parts": [_text("Sorry, it is 1243")]},
    ]
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": CONVERSATION_ID}
    with tracer.start_as_current_span("invoke_agent support", attributes=agent):
        _chat(tracer, history, _call("c3", "1243"))
        _get_order(tracer, "c3", "1243", json.dumps({"order_id": "1243", "status": "shipped"}))
        _chat(tracer, history, _text("Order 1243 has **shipped**."))


def _support(db: Path) -> list[str]:
    """The two turns of the support conversation, stored; their trace ids, oldest first."""
    resource = {"service.name": "support-agent"}
    ids = []
    with Store(db) as store:
        for turn in (_support_turn_1, _support_turn_2):
            spans = record(turn, resource)
            store.add_traces(encode_spans(spans))
            ids.append(format(spans[0].context.trace_id, "032x"))
    return ids


def _scored_from_file(root: Path, db: Path) -> str:
    """``tracegrade score FILE --db DB``: a run stored without its trace."""
    from google.protobuf import json_format

    trace_file = root / "from-file.json"
    request = encode_spans(record(lambda tracer: _hostile_turn(tracer), {"service.name": "files"}))
    trace_file.write_text(json_format.MessageToJson(request))
    out = root / "from-file-run.json"
    args = ["score", str(trace_file), "--db", str(db), "--json", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return str(json.loads(out.read_text())["run"]["run_id"])


def build(root: Path) -> ShopStore:
    """Build the store under ``root`` (about 7 s: two agent runs)."""
    db = root / "ui.db"
    good = _run(db, "good", root / "good.json")
    bad = _run(db, "invented_price", root / "bad.json")
    judged = _judged_run(db, root)
    xss_run, xss_trace, xss_dataset = _hostile(db, root)
    support = _support(db)
    file_run = _scored_from_file(root, db)
    golden = root / "golden.yaml"
    shutil.copy(GOLDEN, golden)
    return ShopStore(
        db, good, bad, judged, xss_run, xss_trace, golden, xss_dataset, support, file_run
    )
