"""A streamed run writes what a run held in memory wrote: the same --json text, the same JUnit
bytes, the same stored run; the console report is bounded; and no case result outlives its
batch (memory flat in the number of traces)."""

from __future__ import annotations

import gc
import json
import weakref
import xml.etree.ElementTree as ET

from click.testing import CliRunner

from tests.support.sample_document import CASES, DOC
from tests.support.traces import make_trace
from tracegrade.cli import cli
from tracegrade.cli import score as score_cli
from tracegrade.config import load_config
from tracegrade.pipeline import _score as score_pipeline
from tracegrade.pipeline.outputs import write_document
from tracegrade.report.caselog import CaseLog
from tracegrade.report.console import print_report
from tracegrade.report.junit import to_junit, write_junit
from tracegrade.run_document import CaseEntry, RunHead, StreamedDocument
from tracegrade.scoring import build_scorers, config_for
from tracegrade.scoring import summary as running
from tracegrade.scoring.streaming import stream_results
from tracegrade.store import runs as stored
from tracegrade.store.traces import Store


def logged(cases):
    log = CaseLog()
    for case in cases:
        log.add(CaseEntry.model_validate(case))
    return log


def streamed(doc, log):
    return StreamedDocument(RunHead.model_validate(doc), log)


def test_the_case_log_reads_back_every_entry_in_order_each_time():
    typed = [CaseEntry.model_validate(case) for case in CASES]
    with logged(CASES) as log:
        assert len(log) == 2 and list(log) == typed and list(log) == typed
        outer = iter(log)
        assert next(outer) == typed[0] and list(log) == typed and next(outer) == typed[1]
        assert [json.loads(line) for line in log.lines()] == CASES  # the fields it was given


def test_the_streamed_json_is_the_json_of_the_whole_document(tmp_path):
    for cases in ([], CASES[:1], CASES):
        expected = json.dumps({**DOC, "cases": cases}, indent=2, ensure_ascii=False)
        with logged(cases) as log:
            write_document(str(tmp_path / "run.json"), streamed(DOC, log))
        assert (tmp_path / "run.json").read_text(encoding="utf-8") == expected


def test_the_json_writes_numbers_as_python_does(tmp_path):
    """orjson writes 1e-05 as 0.00001 and 1e-07 as 1e-7; the document keeps Python's form."""
    case = {**CASES[0], "score": 1e-05, "scores": {"a": 3.5e-07, "b": 0.5}, "reasons": ["0.00001"]}
    expected = json.dumps({**DOC, "cases": [case]}, indent=2, ensure_ascii=False)
    with logged([case]) as log:
        write_document(str(tmp_path / "run.json"), streamed(DOC, log))
    assert (tmp_path / "run.json").read_text(encoding="utf-8") == expected


def test_the_streamed_junit_is_the_junit_of_the_whole_document(tmp_path):
    for cases in ([], CASES[:1], CASES):
        tree = to_junit({**DOC, "cases": cases})
        ET.indent(tree)
        tree.write(tmp_path / "whole.xml", encoding="utf-8", xml_declaration=True)
        with logged(cases) as log:
            write_junit(streamed(DOC, log), tmp_path / "streamed.xml")
        assert (tmp_path / "streamed.xml").read_bytes() == (tmp_path / "whole.xml").read_bytes()


def test_a_run_is_stored_from_the_log_in_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(stored, "_CHUNK", 1)
    doc = {**DOC, "run": {**DOC["run"], "passed": False}}
    with logged(CASES) as log, Store(str(tmp_path / "s.db")) as store:
        stored.save_run(store, streamed(doc, log))
        assert stored.load_run(store, "r1")["cases"] == CASES


def test_the_console_lists_at_most_the_limit_and_says_where_the_rest_are(capsys):
    many = [{**CASES[0], "case_id": f"c{n}"} for n in range(7)] + [CASES[1]]
    doc = {
        **DOC,
        "run": {**DOC["run"], "passed": False, "min_pass_rate": 1.0, "tier": None},
        "summary": {
            **json.loads(json.dumps(DOC["summary"])),
            "results": 8,
            "passed": 1,
            "failed": 7,
            "pass_rate": 0.125,
            "scorers": {},
            "excluded": {},
            "unmatched_cases": 0,
            "unmatched_traces": 0,
            **dict.fromkeys(["hallucination_rate", "cost_usd", "input_tokens", "output_tokens"]),
            **{
                f"{k}_p{q}_ms": None
                for k in ("latency", "llm_latency", "tool_latency")
                for q in (50, 95)
            },
            "latency_sample": {
                "method": "uniform reservoir sample",
                "size": 10,
                "values": {"latency": 12},
            },
        },  # fmt: skip
    }
    with logged(many) as log:
        print_report(streamed(doc, log), limit=3, see_all="tracegrade runs show r1")
    out = capsys.readouterr().out
    assert "c2" in out and "c3" not in out
    assert "... and 4 more failed case(s): tracegrade runs show r1" in out
    assert "estimated from a uniform reservoir sample of 10 values" in out
    print_report({**doc, "cases": many})  # without a limit: every failed case, as before
    assert "c6" in capsys.readouterr().out


def test_no_result_outlives_its_batch():
    """Structural: while a run streams, the results alive are at most those of one batch
    (a pipeline that kept results, e.g. for the report, would hold all 60)."""
    traces = [make_trace(trace_id=f"t{n:02d}", final_output="done") for n in range(60)]
    alive: list[weakref.ref] = []
    most = 0

    def sink(result):
        nonlocal most
        gc.collect()
        most = max(most, sum(r() is not None for r in alive))
        alive.append(weakref.ref(result))

    batches = (traces[i : i + 5] for i in range(0, 60, 5))
    config = config_for(load_config(None), None)
    scorers = build_scorers(config, with_plugins=False)
    leftover, facts = stream_results(batches, None, scorers, config, sink)
    assert facts.count == 60 and len(alive) == 60 and most <= 5


def test_score_keeps_no_result_and_bounds_its_report(tmp_path, monkeypatch):
    """`score` end to end: each result is dropped once counted and written."""
    added: list[weakref.ref] = []
    most = 0
    original = running.RunningSummary.add

    def add(self, result):
        nonlocal most
        gc.collect()
        most = max(most, sum(r() is not None for r in added))
        added.append(weakref.ref(result))
        original(self, result)

    monkeypatch.setattr(running.RunningSummary, "add", add)
    monkeypatch.setattr(score_cli, "CASES_SHOWN", 2)
    read = score_pipeline.load_batches
    monkeypatch.setattr(  # batches of 5 traces
        score_pipeline,
        "load_batches",
        lambda *a, **k: (b[i : i + 5] for b in read(*a, **k) for i in range(0, len(b), 5)),
    )
    path = tmp_path / "traces.jsonl"
    _write_traces(path, 30)
    out = CliRunner().invoke(
        cli, ["score", str(path), "--no-save", "--json", str(tmp_path / "r.json"), "-v"]
    )
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["cases"]) == 30 and len(added) == 30 and most <= 5  # one batch
    assert "... and 28 more case(s): every case is in" in out.output


def _write_traces(path, count):
    spans = [
        {"traceId": f"{n:032x}", "spanId": "00000000000000aa", "name": "agent",
         "startTimeUnixNano": "1000000000", "endTimeUnixNano": str(1000000000 + n * 10**6),
         "attributes": [{"key": "gen_ai.operation.name",
                         "value": {"stringValue": "invoke_agent"}}]}
        for n in range(count)
    ]  # fmt: skip
    lines = [
        json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]})
        for span in spans
    ]
    path.write_text("\n".join(lines) + "\n")
