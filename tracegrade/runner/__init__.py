"""CI eval runs (``tracegrade run``): drive an instrumented agent through a golden dataset and
score the traces it exports.

One module per concern: :mod:`.telemetry` (the runner's tracer provider, case spans, W3C
propagation), :mod:`.agents` (in-process, subprocess and HTTP agents, each linked to its
case through OpenTelemetry), :mod:`.conversation` (turns and clarification follow-ups),
:mod:`.settle` (waiting for a case's traces in the store), :mod:`.execute` (concurrency,
timeouts, scoring, Ctrl-C), :mod:`.results` (repeats and the run document),
:mod:`.progress` (terminal and CI-log progress), :mod:`.simulation` (simulated users: who plays
a case's ``user`` and the conversation it holds) and :mod:`.session` (one run end to end).
"""

from __future__ import annotations

from tracegrade.runner.agents import AgentFailure, Attempt, CommandAgent, HttpAgent, PythonAgent
from tracegrade.runner.conversation import (
    FollowUp,
    FollowUps,
    JudgeClarifications,
    ScriptedClarifications,
)
from tracegrade.runner.execute import Runner, RunPlan, Scoring
from tracegrade.runner.session import EvalRun, run_eval

__all__ = [
    "AgentFailure",
    "Attempt",
    "CommandAgent",
    "EvalRun",
    "FollowUp",
    "FollowUps",
    "HttpAgent",
    "JudgeClarifications",
    "PythonAgent",
    "RunPlan",
    "Runner",
    "ScriptedClarifications",
    "Scoring",
    "run_eval",
]
