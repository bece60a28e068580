"""Settling without waiting (issue 16.5): a subprocess agent's traces are complete once its
process has exited and its traces have their root or agent span; the quiet period is only the
fallback for traces without one."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.runner.conftest import agent_command, run_cli
from tracegrade.runner.settle import SettleRule, is_settled
from tracegrade.store.traces import TraceState

COMMAND = agent_command(sys.executable)


def _state(ended: bool, last_received_at: float) -> TraceState:
    return TraceState("t1", "run", "case", ended, 3, last_received_at - 1, last_received_at)


def test_an_exited_process_whose_traces_ended_is_settled_at_once():
    exited = SettleRule(quiet_s=30.0, by_labels=True, done_when_ended=True)
    assert is_settled([_state(True, 10.0)], exited, now=10.0)


def test_without_a_root_span_the_quiet_period_still_applies():
    exited = SettleRule(quiet_s=30.0, by_labels=True, done_when_ended=True)
    assert not is_settled([_state(False, 10.0)], exited, now=10.0)
    assert is_settled([_state(False, 10.0)], exited, now=40.0)


def test_without_the_exit_signal_an_ended_trace_waits_the_quiet_period():
    assert not is_settled([_state(True, 10.0)], SettleRule(quiet_s=30.0), now=10.0)


def test_a_command_agent_case_is_scored_without_waiting_out_the_quiet_period(
    model, dataset, tmp_path: Path
) -> None:
    """A 60 s quiet period and a 5 s settle timeout: the cases pass only because the exit of
    the agent's process (its SDK flushed and the receiver committed) settles them."""
    ran = run_cli(
        tmp_path,
        dataset,
        "--agent-cmd",
        COMMAND,
        "--settle-quiet",
        "60",
        "--settle-timeout",
        "5",
    )
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert all(c["passed"] for c in ran.doc["cases"])
