"""``tracegrade score``: inputs, tiers, outputs (JSON contract, JUnit XML), exit codes, stored
runs."""

from __future__ import annotations

import json
import sqlite3
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.ecommerce_agent import ShopAgent
from tracegrade.cli import cli
from tracegrade.pipeline.reading import parse_since, sampled
from tracegrade.store.runs import list_runs, load_run
from tracegrade.store.traces import Store

DATASETS = Path(__file__).parents[2] / "datasets"
ORDERS = DATASETS / "e-commerce-agents" / "order_management.json"
QUESTIONS = [c["input"] for c in json.loads(ORDERS.read_text())]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def traces(tmp_path) -> Path:
    agent = ShopAgent("good")
    for question in QUESTIONS:
        agent.ask(question)
    return agent.export(tmp_path / "traces.binpb")


@pytest.fixture
def tiered(tmp_path) -> Path:
    path = tmp_path / "tiered.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: tiered
        cases:
          - id: recent
            input: {QUESTIONS[0]!r}
            expected_tools: [get_user_orders]
            tier: smoke
            tags: [orders]
          - id: cancel
            input: {QUESTIONS[3]!r}
            expected_tool_calls:
              - name: cancel_order
                arguments: {{order_id: {{regex: "^550e8400-"}}}}
          - id: never-run
            input: "A question no trace asks"
            expected_tools: [get_user_orders]
        """)
    )
    return path


def test_json_contract(tmp_path, traces):
    out = tmp_path / "r.json"
    result = run("score", traces, "--dataset", ORDERS, "--json", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == "tracegrade.run/1"
    assert set(doc) == {"schema_version", "run", "summary", "cases"}
    case = doc["cases"][0]
    assert {"case_id", "trace_id", "passed", "score", "scores", "reasons"} <= set(case)
    assert case["case_id"] == "order_management:1" and len(case["trace_id"]) == 32
    assert set(case["scores"]) >= {
        "groundedness",
        "tool_correctness",
        "completeness",
        "value_grounding",
    }
    assert doc["run"]["dataset"]["digest"] and doc["run"]["tracegrade_version"]


def test_unmatched_case_fails_the_run_and_tiers_select_cases(tmp_path, traces, tiered):
    out = tmp_path / "full.json"
    result = run("score", traces, "--dataset", tiered, "--json", out)
    assert result.exit_code == 1
    doc = json.loads(out.read_text())
    assert [(c["case_id"], c["passed"]) for c in doc["cases"]] == [
        ("recent", True),
        ("cancel", True),
        ("never-run", False),
    ]
    assert doc["cases"][2]["reasons"] == ["no trace matched this case"]
    assert doc["cases"][0]["tags"] == ["orders"] and doc["summary"]["unmatched_traces"] == 3
    result = run("score", traces, "--dataset", tiered, "--smoke", "--json", out)
    assert result.exit_code == 0 and [
        c["case_id"] for c in json.loads(out.read_text())["cases"]
    ] == ["recent"]


def test_min_pass_rate_lets_a_run_with_failures_pass(traces, tiered):
    assert run("score", traces, "--dataset", tiered, "--min-pass-rate", "0.6").exit_code == 0


def test_no_case_matched_is_exit_2(tmp_path, traces):
    dataset = tmp_path / "other.json"
    dataset.write_text(json.dumps([{"input": "nobody asked this", "expected_tools": ["x"]}]))
    result = run("score", traces, "--dataset", dataset)
    assert result.exit_code == 2 and "no case matched a trace" in result.stderr


def test_bad_dataset_is_exit_2_naming_file_line_case_and_field(tmp_path, traces):
    dataset = tmp_path / "bad.yaml"
    dataset.write_text("- input: hi\n  expected_tools: [a]\n- input: yo\n  must_contain: 5\n")
    result = run("score", traces, "--dataset", dataset)
    assert result.exit_code == 2
    assert f"{dataset}:4: case 2: field 'must_contain'" in result.stderr  # the field's line


def test_junit_xml(tmp_path, traces, tiered):
    junit = tmp_path / "junit.xml"
    run("score", traces, "--dataset", tiered, "--junit", junit)
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and suite.get("tests") == "3" and suite.get("failures") == "1"
    failed = [tc for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert [tc.get("name") for tc in failed] == ["never-run"]
    assert failed[0].find("failure").get("type") == "unmatched"


def test_reference_free_scoring_without_dataset(tmp_path, traces):
    out = tmp_path / "r.json"
    result = run("score", traces, "--json", out)
    doc = json.loads(out.read_text())
    assert result.exit_code == 0 and doc["run"]["dataset"] is None
    assert set(doc["summary"]["axes"]) == {"errors", "value_grounding"}
    assert all(c["case_id"] is None and c["scores"]["groundedness"] is None for c in doc["cases"])


def test_runs_are_stored_with_metadata(traces, _isolated_store):
    run("score", traces, "--dataset", ORDERS)
    with Store() as store:
        (listed,) = list_runs(store)
        doc = load_run(store, listed["run_id"])
    assert listed["dataset"] == "order_management" and listed["passed"] is True
    assert len(doc["cases"]) == 5 and doc["run"]["agent_version"] == "1.4.2"
    db = sqlite3.connect(_isolated_store)
    assert db.execute("SELECT COUNT(*) FROM case_results").fetchone()[0] == 5


def test_score_from_the_store_after_import(traces):
    assert run("import", traces).exit_code == 0
    result = run("score", "--dataset", ORDERS, "--limit", "10")
    assert result.exit_code == 0, result.output
    assert "passed 5/5" in result.output


def test_sample_is_deterministic_by_trace_id(tmp_path):
    ids = [f"{i:032x}" for i in range(2000)]
    kept = [t for t in ids if sampled(t, 0.25)]
    assert kept == [t for t in ids if sampled(t, 0.25)]
    assert 400 < len(kept) < 600
    assert set(kept) <= {t for t in ids if sampled(t, 0.5)}


def test_since_parses_relative_and_iso():
    assert parse_since("2h", now_s=10_000) == (10_000 - 7200) * 10**9
    assert parse_since("2026-11-01") == 1_793_491_200 * 10**9
    with pytest.raises(Exception, match="use 30m, 12h, 7d"):
        parse_since("yesterday")


def test_since_filters_traces(traces):
    result = run("score", traces, "--since", "2000-01-01")
    assert result.exit_code == 0
    result = run("score", traces, "--since", "2999-01-01")
    assert result.exit_code == 2 and "no traces to score" in result.stderr


def test_plugin_scorer_by_reference(tmp_path, traces, monkeypatch):
    (tmp_path / "my_scorers.py").write_text(
        textwrap.dedent("""\
        def politeness(trace, case):
            return 1.0 if trace.final_output and "please" in trace.final_output.lower() else 0.0
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "r.json"
    run("score", traces, "--dataset", ORDERS, "--scorer", "my_scorers:politeness", "--json", out)
    assert all(c["scores"]["politeness"] == 0.0 for c in json.loads(out.read_text())["cases"])
    result = run("score", traces, "--scorer", "my_scorers:nope")
    assert result.exit_code == 2 and "has no attribute 'nope'" in result.stderr
    sys.modules.pop("my_scorers", None)


def test_verbose_prints_every_scorer(traces):
    result = run("score", traces, "--dataset", ORDERS, "--verbose")
    assert "tool_correctness: 1.00" in result.output and "value_grounding" in result.output


def test_per_call_latency_is_summarised(tmp_path, traces):
    out = tmp_path / "r.json"
    run("score", traces, "--dataset", ORDERS, "--json", out)
    doc = json.loads(out.read_text())
    summary = doc["summary"]
    assert summary["llm_latency_p50_ms"] is not None and summary["tool_latency_p95_ms"] is not None
    assert all(c["usage"]["llm_latency_max_ms"] <= c["usage"]["duration_ms"] for c in doc["cases"])


def test_multi_turn_case_matches_only_traces_that_follow_its_turns(tmp_path, traces):
    dataset = tmp_path / "turns.yaml"
    dataset.write_text(
        f"- id: follows\n  turns: [{QUESTIONS[0]!r}]\n- id: diverges\n"
        f"  turns: [{QUESTIONS[0]!r}, 'and then something else']\n"
    )
    out = tmp_path / "r.json"
    run("score", traces, "--dataset", dataset, "--json", out)
    cases = {c["case_id"]: c for c in json.loads(out.read_text())["cases"]}
    assert cases["follows"]["trace_id"] is not None and cases["diverges"]["trace_id"] is None
