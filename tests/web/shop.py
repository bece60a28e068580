"""A real trace store for the web tests: two ``tracegrade run`` runs of the example shop agent
(examples/ecommerce) against its golden dataset's smoke tier, with the scripted model playing
a good model and the ``invented_price`` regression, plus a hostile trace (XSS payloads in the
user's input, the answer, a tool argument and a tool result; recorded by the OpenTelemetry
SDK) scored by ``tracegrade score`` against a dataset whose case input is the payload too."""

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


def build(root: Path) -> ShopStore:
    """Build the store under ``root`` (about 7 s: two agent runs)."""
    db = root / "ui.db"
    good = _run(db, "good", root / "good.json")
    bad = _run(db, "invented_price", root / "bad.json")
    judged = _judged_run(db, root)
    xss_run, xss_trace, xss_dataset = _hostile(db, root)
    golden = root / "golden.yaml"
    shutil.copy(GOLDEN, golden)
    return ShopStore(db, good, bad, judged, xss_run, xss_trace, golden, xss_dataset)
