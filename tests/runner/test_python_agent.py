"""``tracegrade run --agent module:function``: in-process agents under the runner's root span."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.conftest import CASES, run_cli, write_dataset
from tracegrade.run_document import RunDocument
from tracegrade.store.runs import load_run
from tracegrade.store.traces import Store

SHOP = "tests.runner.shop_agent:answer"


def test_good_script_passes_and_each_case_is_one_trace_under_the_case_span(
    model, dataset, tmp_path: Path
) -> None:
    ran = run_cli(tmp_path, dataset, "--agent", SHOP, "--db", str(tmp_path / "s.db"))
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    with Store(tmp_path / "s.db") as store:
        for case in ran.doc["cases"]:
            assert case["passed"] and case["scores"]["tool_correctness"] == 1.0
            (trace_id,) = case["attempts"][0]["trace_ids"]
            (trace,) = store.load([trace_id])
            root = next(s for s in trace.spans if s.parent_span_id is None)
            assert root.name == f"tracegrade case {case['case_id']}"
            assert root.attributes["tracegrade.case_id"] == case["case_id"]
            assert root.attributes["tracegrade.run_id"] == ran.doc["run"]["run_id"]
            assert {s.name for s in trace.spans} >= {
                "invoke_agent shop",
                "chat scripted",
                "execute_tool get_price",
            }


def test_regression_script_skipping_the_tool_and_inventing_a_price_exits_1(
    model, dataset, tmp_path: Path
) -> None:
    model.mode = "regression"
    ran = run_cli(tmp_path, dataset, "--agent", SHOP)
    assert ran.exit_code == 1
    case = ran.case("sony-price")
    assert not case["passed"] and case["scores"]["tool_correctness"] == 0.0
    assert case["details"]["value_grounding"]["details"]["ungrounded"]


def test_async_agent_and_the_smoke_tier(model, dataset, tmp_path: Path) -> None:
    ran = run_cli(tmp_path, dataset, "--agent", "tests.runner.shop_agent:answer_async", "--smoke")
    assert ran.exit_code == 0
    assert [c["case_id"] for c in ran.doc["cases"]] == ["sony-price"]
    assert ran.doc["run"]["tier"] == "smoke"


def test_an_agent_exception_fails_only_its_case(model, tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "d.yaml", [*CASES, {"id": "boom", "input": "BOOM now"}])
    ran = run_cli(
        tmp_path, path, "--agent", "tests.runner.agents:raising", "--junit", str(tmp_path / "j.xml")
    )
    assert ran.exit_code == 1
    boom = ran.case("boom")
    assert not boom["passed"] and "ValueError: the catalogue is on fire" in boom["error"]
    assert ran.case("sony-price")["passed"] and ran.case("bose-price")["passed"]
    assert ran.doc["summary"]["agent_errors"] == 1
    junit = (tmp_path / "j.xml").read_text()
    assert 'type="agent_error"' in junit and 'errors="1"' in junit


def test_multi_turn_conversation_is_one_trace_scored_as_a_whole(model, tmp_path: Path) -> None:
    turns = ["How much is the Sony WH-1000XM5?", "And the Bose QC Ultra?"]
    path = write_dataset(
        tmp_path / "d.yaml",
        [
            {
                "id": "two-prices",
                "turns": turns,
                "expected_tools": ["get_price", "get_price"],
                "expected_tool_calls": [
                    {"name": "get_price", "arguments": {"product": {"regex": "(?i)bose"}}}
                ],
            }
        ],
    )
    ran = run_cli(
        tmp_path,
        path,
        "--agent",
        "tests.runner.agents:conversation_only",
        "--db",
        str(tmp_path / "s.db"),
    )
    assert ran.exit_code == 0, ran.stdout
    case = ran.case("two-prices")
    assert case["scores"]["tool_correctness"] == 1.0 and len(case["attempts"][0]["trace_ids"]) == 1
    assert case["usage"]["tool_calls"] == 2 and case["usage"]["llm_calls"] == 4
    second = next(
        r for r in model.requests if [m["content"] for m in r if m["role"] == "user"] == turns
    )
    assert [m["role"] for m in second] == [
        "user",
        "assistant",
        "user",
    ]  # the whole conversation, in order


def test_repeats_report_median_spread_and_a_flaky_case(model, tmp_path: Path) -> None:
    path = write_dataset(
        tmp_path / "d.yaml",
        [CASES[0], {**CASES[0], "id": "flaky", "input": "Flaky: how much is the Sony WH-1000XM5?"}],
    )
    priced = tmp_path / "tracegrade.yaml"  # the scripted model at gpt-4o-mini's price
    priced.write_text("pricing:\n  models:\n    scripted: {input: 0.15, output: 0.6}\n")
    args = ("--agent", SHOP, "--repeat", "3", "--concurrency", "3", "--config", str(priced))
    ran = run_cli(tmp_path, path, *args)
    assert ran.exit_code == 0, ran.stdout  # 2 of 3 repeats pass: the median repeat passes
    flaky, steady = ran.case("flaky"), ran.case("sony-price")
    assert flaky["flaky"] and not steady["flaky"]
    assert [a["passed"] for a in flaky["attempts"]].count(False) == 1
    assert flaky["spread"] > 0.5 and steady["spread"] == 0.0
    assert len({tid for a in flaky["attempts"] for tid in a["trace_ids"]}) == 3
    assert ran.doc["summary"]["flaky"] == 1 and ran.doc["run"]["repeat"] == 3
    assert "flaky" in ran.stdout
    # issue 27, defect 9: the summary's tokens and cost are one attempt per case; what the
    # six attempts spent is reported too (document, console)
    attempts = [a for c in ran.doc["cases"] for a in c["attempts"]]
    summary, spent = ran.doc["summary"], ran.doc["summary"]["spent"]
    assert spent["attempts"] == 6 and all(a["input_tokens"] for a in attempts)
    assert spent["input_tokens"] == sum(a["input_tokens"] for a in attempts)
    assert spent["output_tokens"] == sum(a["output_tokens"] for a in attempts)
    assert spent["cost_usd"] == pytest.approx(sum(a["cost_usd"] for a in attempts))
    assert summary["input_tokens"] == sum(c["usage"]["input_tokens"] for c in ran.doc["cases"])
    assert spent["input_tokens"] > summary["input_tokens"] and spent["cost_usd"] > 0
    assert flaky["spent"]["input_tokens"] == sum(a["input_tokens"] for a in flaky["attempts"])
    RunDocument.from_json(ran.doc)
    assert "spent over 6 attempts" in " ".join(ran.stdout.split())


def test_run_metadata_is_stored_with_the_results(model, dataset, tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    ran = run_cli(
        tmp_path,
        dataset,
        "--agent",
        SHOP,
        "--db",
        db,
        "--label",
        "prompt v2 / gpt-4o-mini",
        "--case",
        "bose-price",
    )
    assert ran.exit_code == 0
    with Store(db) as store:
        stored = load_run(store, ran.doc["run"]["run_id"])
    run = stored["run"]
    assert run["label"] == "prompt v2 / gpt-4o-mini"
    assert run["agent"] == {"kind": "python", "spec": SHOP}
    assert run["dataset"]["source"] == dataset and len(run["dataset"]["digest"]) == 64
    assert run["started_at"] <= run["finished_at"] and run["interrupted"] is False
    assert "git_branch" in run and "git_sha" in run
    assert [c["case_id"] for c in stored["cases"]] == ["bose-price"]


def test_ctrl_c_stops_the_run_and_reports_what_finished(model, tmp_path: Path) -> None:
    path = write_dataset(
        tmp_path / "d.yaml", [CASES[0], {"id": "stop", "input": "STOP please"}, CASES[1]]
    )
    ran = run_cli(
        tmp_path, path, "--agent", "tests.runner.agents:interrupting", "--concurrency", "1"
    )
    assert ran.exit_code == 2
    assert ran.doc["run"]["interrupted"] is True and not ran.doc["run"]["passed"]
    assert [c["case_id"] for c in ran.doc["cases"]] == ["sony-price"]
    assert "interrupted" in ran.stderr


def test_placeholders_of_redacted_data_reach_the_agent_as_made_up_values(
    model, tmp_path: Path
) -> None:
    """Issue 27, defect 2: a case built from a conversation with an e-mail address says
    ``[REDACTED:email:1]``; the agent gets a made-up address of that kind, the same one in
    every turn, never the placeholder."""
    path = write_dataset(
        tmp_path / "d.yaml",
        [
            {
                "id": "redacted",
                "turns": [
                    "I'm [REDACTED:email:1], card [REDACTED:card:1]. Any headphones?",
                    "Still [REDACTED:email:1]: the Sony WH-1000XM5, please",
                ],
                "expected_tools": ["get_price"],
            }
        ],
    )
    ran = run_cli(tmp_path, path, "--agent", SHOP)
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    sent = [m["content"] for r in model.requests for m in r if m["role"] == "user"]
    assert sent and not any("[REDACTED" in s for s in sent)
    assert "I'm customer1@example.com, card 4000 0000 0000 0010. Any headphones?" in sent
    assert "Still customer1@example.com: the Sony WH-1000XM5, please" in sent
    assert ran.case("redacted")["passed"]
