"""``tracegrade run --agent-cmd``: an opaque command (a shell script wrapping Python) linked to
its case only through OTEL_RESOURCE_ATTRIBUTES and the OTLP endpoint."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.runner.conftest import CASES, agent_command, run_cli, write_dataset
from tracegrade.store.traces import Store

COMMAND = agent_command(sys.executable)


def test_good_script_exits_0_and_only_otlp_links_spans_to_the_case(
    model, dataset, tmp_path: Path
) -> None:
    ran = run_cli(tmp_path, dataset, "--agent-cmd", COMMAND, "--db", str(tmp_path / "s.db"))
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    with Store(tmp_path / "s.db") as store:
        for case in ran.doc["cases"]:
            (trace,) = store.load(case["attempts"][0]["trace_ids"])
            assert not any(
                s.name.startswith("tracegrade case") for s in trace.spans
            )  # no runner span
            resource = trace.spans[0].resource_attributes
            assert resource["tracegrade.case_id"] == case["case_id"]
            assert resource["tracegrade.run_id"] == ran.doc["run"]["run_id"]
            assert resource["service.name"] == "shop-agent"
    assert ran.doc["run"]["agent"] == {"kind": "command", "spec": COMMAND}


def test_crash_hang_and_nonzero_exit_each_fail_only_their_case(model, tmp_path: Path) -> None:
    path = write_dataset(
        tmp_path / "d.yaml",
        [
            CASES[0],
            {"id": "crash", "input": "CRASH now"},
            {"id": "hang", "input": "HANG now"},
            {"id": "exit", "input": "EXIT3 now"},
        ],
    )
    ran = run_cli(tmp_path, path, "--agent-cmd", COMMAND, "--timeout", "4", "--concurrency", "4")
    assert ran.exit_code == 1, ran.stdout + ran.stderr
    assert ran.case("sony-price")["passed"]
    assert "crashed (SIGABRT" in ran.case("crash")["error"]
    assert ran.case("hang")["error"].startswith("agent timed out after 4 s")
    exit3 = ran.case("exit")["error"]
    assert (
        "exited with code 3" in exit3 and "cannot reach the catalogue" in exit3
    )  # the stderr tail
    assert ran.doc["summary"]["agent_errors"] == 3
    assert "3 case(s) failed in the agent" in ran.stdout


def test_a_traceback_is_reported_by_its_error_line(model, tmp_path: Path) -> None:
    """Issue 27, defect 12: the progress line showed "stderr: Traceback (most recent call
    last): File ..." cut at 200 characters, never the error itself."""
    path = write_dataset(tmp_path / "d.yaml", [{"id": "raise", "input": "RAISE now"}])
    ran = run_cli(tmp_path, path, "--agent-cmd", COMMAND)
    error = ran.case("raise")["error"]
    stated = "LookupError: catalogue index missing for 'sony'"
    assert error.startswith(f"agent command exited with code 1: {stated}\nstderr: "), error
    assert "Traceback (most recent call last)" in error  # the tail is still there
    (line,) = [line for line in ran.stderr.splitlines() if line.startswith("FAIL raise")]
    assert stated in line and "Traceback" not in line


def test_multi_turn_over_grpc_scores_the_turns_traces_together(model, tmp_path: Path) -> None:
    turns = ["How much is the Sony WH-1000XM5?", "And the Bose QC Ultra?"]
    path = write_dataset(
        tmp_path / "d.yaml", [{"id": "two", "turns": turns, "expected_tools": ["get_price"] * 2}]
    )
    ran = run_cli(
        tmp_path,
        path,
        "--agent-cmd",
        COMMAND,
        "--input-format",
        "messages",
        "--otlp-protocol",
        "grpc",
    )
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    case = ran.case("two")
    assert len(case["attempts"][0]["trace_ids"]) == 2  # one process, so one trace, per turn
    assert case["scores"]["tool_correctness"] == 1.0 and case["usage"]["tool_calls"] == 2
    second = next(r for r in model.requests if len([m for m in r if m["role"] == "user"]) == 2)
    assert [m["content"] for m in second if m["role"] == "user"] == turns


def test_a_background_child_holding_stdout_does_not_hold_the_case(model, tmp_path: Path) -> None:
    """The turn ends when the agent process exits: a child it leaves running with stdout and
    stderr still open (a log shipper, a daemon) is not waited for."""
    path = write_dataset(tmp_path / "d.yaml", [CASES[0]])
    command = f"{COMMAND}; sleep 30 &"
    ran = run_cli(tmp_path, path, "--agent-cmd", command, "--timeout", "6")
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    case = ran.case("sony-price")
    assert case["passed"] and not case.get("error")
    assert case["attempts"][0]["trace_ids"]
