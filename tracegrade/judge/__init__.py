"""The LLM judge: a stronger model grades an agent's answer against a rubric, with the trace
(user input, tool calls and their results, final answer) as evidence.

One module per concern: :mod:`.settings` (model, endpoint, credentials), :mod:`.client`
(``openai`` calls, structured output, validation, retries), :mod:`.evidence` (what the judge
sees, within a token budget), :mod:`.rubrics` (score bands, the built-in ``faithfulness``
rubric, the verdict schema), :mod:`.cache` (verdicts kept in the store), :mod:`.scorer` (the
``judge`` scorer), :mod:`.clarify` (clarification follow-ups for ``tracegrade run``),
:mod:`.simulate` (the LLM that plays a case's simulated user in ``tracegrade run``) and
:mod:`.calibrate` (agreement with human labels, ``tracegrade judge-check``).
"""

from __future__ import annotations

from tracegrade.judge.clarify import Clarifier
from tracegrade.judge.client import JudgeClient, JudgeError, JudgeUsage
from tracegrade.judge.rubrics import FAITHFULNESS, Verdict
from tracegrade.judge.scorer import JUDGE_ERROR, JudgeScorer, build_judge
from tracegrade.judge.settings import JudgeSettings, resolve_settings
from tracegrade.store.judge_cache import JudgeCache

__all__ = [
    "FAITHFULNESS",
    "JUDGE_ERROR",
    "Clarifier",
    "JudgeCache",
    "JudgeClient",
    "JudgeError",
    "JudgeScorer",
    "JudgeSettings",
    "JudgeUsage",
    "Verdict",
    "build_judge",
    "resolve_settings",
]
