"""Issue 24: the run document is typed and versioned: every document tracegrade writes
(``score``, ``run``, the pytest plugin, earlier versions' stored documents) validates as a
:class:`~tracegrade.run_document.RunDocument`, and a bad one is refused at the edge with the
field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracegrade.cli import cli
from tracegrade.compare import read_document
from tracegrade.errors import InputError
from tracegrade.run_document import (
    RunDocument,
    RunMeta,
    ScorerDetail,
    json_schema,
    read_cases,
    read_head,
)

DATA = Path(__file__).parents[1] / "data"
TAU = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp" / "openinference"


def test_a_score_document_validates_and_round_trips(tmp_path):
    path = tmp_path / "r.json"
    result = CliRunner().invoke(
        cli, ["score", str(TAU / "traces.jsonl.gz"), "--json", str(path), "--no-save"]
    )
    assert result.exit_code in (0, 1), result.output
    data = json.loads(path.read_text())
    doc = RunDocument.from_json(data)
    assert doc.summary.results == len(doc.cases) == 25
    assert RunDocument.from_json(doc.to_json()) == doc


def test_a_bad_field_is_named_at_the_edge(tmp_path):
    path = tmp_path / "r.json"
    CliRunner().invoke(
        cli, ["score", str(TAU / "traces.jsonl.gz"), "--json", str(path), "--no-save"]
    )
    data = json.loads(path.read_text())
    data["cases"][3]["passed"] = "maybe"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"cases\.3\.passed"):
        read_document(path)


def test_the_schema_is_published():
    schema = json_schema()
    assert schema["$id"] == "tracegrade.run/1"
    assert {"run", "summary", "cases"} <= set(schema["properties"])


def test_the_schema_types_what_a_run_adds():
    """Issue 39: the parts that were free-form (attempts, judge usage, runner, details) have
    their models in the published schema (summary.runner was missing)."""
    models = json_schema()["$defs"]
    summary = models["RunSummaryEntry"]["properties"]
    assert {"runner", "spent", "clarifier", "judge", "latency_sample"} <= set(summary)
    assert set(models["RunnerFigures"]["properties"]) >= {"attempts", "wall_s", "agent_ms_p50"}
    assert "followup_messages" in models["AttemptEntry"]["properties"]
    assert set(models["ScorerDetail"]["properties"]) == {"value", "reason", "details"}
    assert set(models["JudgeTotals"]["properties"]) >= {"calls", "cost_usd", "models"}


def test_the_typed_reader_reads_a_written_document(tmp_path):
    import tracegrade

    path = tmp_path / "r.json"
    result = CliRunner().invoke(
        cli, ["score", str(TAU / "traces.jsonl.gz"), "--json", str(path), "--no-save"]
    )
    assert result.exit_code in (0, 1), result.output
    doc = tracegrade.read_run_document(path)
    assert isinstance(doc, tracegrade.RunDocument) and isinstance(doc.run, RunMeta)
    assert all(isinstance(c, tracegrade.CaseEntry) for c in doc.cases) and len(doc.cases) == 25
    assert all(isinstance(d, ScorerDetail) for c in doc.cases for d in c.details.values())
    path.write_text('{"schema_version": "tracegrade.run/1", "run": {}}')
    with pytest.raises(InputError, match="run.run_id"):
        tracegrade.read_run_document(path)


HEAD = {
    "schema_version": "tracegrade.run/1",
    "run": {"run_id": "r1", "dataset": {"name": "support", "cases": 2}, "passed": True},
    "summary": {"results": 2, "passed": 2, "failed": 0, "pass_rate": 1.0, "score": 0.9},
}


def test_read_head_types_run_and_summary_and_leaves_the_cases_unread():
    def never():
        raise AssertionError("the cases were read")
        yield

    head = read_head({**HEAD, "cases": never()})
    assert head.run.run_id == "r1" and head.run.dataset and head.run.dataset.name == "support"
    assert head.summary.pass_rate == 1.0 and head.summary.agent_errors == 0
    assert read_head(head) is head


def test_read_cases_reads_one_entry_at_a_time_and_names_a_bad_one():
    pulled = []

    def entries():
        for i, passed in enumerate([True, False, "maybe"]):
            pulled.append(i)
            yield {"case_id": f"c{i}", "passed": passed, "score": 0.5}

    cases = read_cases(entries(), source="r.json")
    first = next(cases)
    assert (first.case_id, first.passed, pulled) == ("c0", True, [0])
    assert next(cases).passed is False
    with pytest.raises(InputError, match=r"r\.json.*cases\.2\.passed"):
        next(cases)


def test_read_head_names_a_bad_field():
    with pytest.raises(InputError, match=r"summary\.passed"):
        read_head({**HEAD, "summary": {"passed": "some"}})


def test_a_document_of_an_earlier_version_reads_at_the_edge():
    """tests/web/run_document.json predates ``notes``, ``category`` and ``latency_sample``."""
    data = json.loads((Path(__file__).parents[1] / "web" / "run_document.json").read_text())
    head = read_head(data)
    cases = list(read_cases(data["cases"]))
    assert head.run.repeat == data["run"]["repeat"]
    assert head.summary.agent_errors == data["summary"]["agent_errors"]
    assert head.summary.latency_sample is None  # added since: its default
    assert [c.case_id for c in cases] == [c["case_id"] for c in data["cases"]]
    assert all(c.notes == [] and c.category is None for c in cases)
    assert [c.flaky for c in cases] == [c["flaky"] for c in data["cases"]]
