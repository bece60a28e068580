"""Tool use: the right tools, in the right order, with the right arguments.

Both scorers read the case's trajectory (:mod:`tracegrade.scoring.trajectory`): the counted
calls, with nested sub-agents' calls at their depth, or only the top level agent's with
``tool_calls_scope: top_level``; and its ``tool_calls_match`` mode (``order`` in the older
words; :mod:`tracegrade.dataset.trajectories`).

- ``tool_correctness``: credit over the expected tools (``expected_tools`` plus the names of
  ``expected_tool_calls``) as a multiset, so one call never satisfies two expected ones:
  ``superset`` (default) the fraction made, extras free; ``in_order`` the longest common
  subsequence of expected and actual names over the expected count; ``exact`` the same over
  the longer of the two, so extras cost; ``any_order`` the multiset intersection over the
  larger count; ``subset`` the fraction of calls within the list, and a call of a tool
  outside it is a hard failure. With no expected tool, ``exact``, ``any_order`` and
  ``subset`` mean that no tool may be called (1.0 without a call, else 0.0; under ``subset``
  a call is also a hard failure); the other modes do not score names. A call to a
  ``forbidden_tools`` entry, at any depth, is a hard failure.
- ``tool_arguments``: each expected call is paired with a distinct actual call of the same
  name by the best assignment (bipartite, :func:`~tracegrade.scoring.trajectory.best_pairs`:
  first every call that satisfies all its predicates, then the best partial matches; repeated
  calls of one tool are paired by match, not by order); its credit is the fraction of
  predicates satisfied under its ``arguments_match``, 0 when no call is left. The reasons name
  each failed argument and the value it had. An expected call marked ``required`` that no call
  fully satisfies is a hard failure, and so is a call of a ``strict_tools`` entry that is not
  a full match of some expected call (an extra write). Under ``subset`` every listed tool is
  strict and only the expected calls that were made count toward the credit. Each call is
  reported once: a call paired with an expected call whose arguments are wrong is one
  "wrong-argument call" (hard when the expected call is required or the tool strict), never
  also an "unexpected call" and a "required call not made".

Both count performed calls by default (``count_tool_calls`` in the config): a call that
failed did not do the work.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Case, ExpectedToolCall
from tracegrade.dataset.predicates import ArgumentCheck, check_arguments
from tracegrade.dataset.trajectories import NOTHING_MORE
from tracegrade.scoring.grounding import Counting, tool_calls_unrecorded
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.trajectory import (
    best_pairs,
    lcs_length,
    name_credit,
    outside,
    trajectory,
)
from tracegrade.trace import AgentTrace, ToolCall

__all__ = ["ToolArguments", "ToolCorrectness", "lcs_length"]


@dataclass(frozen=True)
class ToolCorrectness:
    """Expected tools called (multiset, partial credit, a ``tool_calls_match`` mode), none
    forbidden."""

    counting: Counting = "performed"
    name: str = "tool_correctness"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if case is None:
            return skipped(self.name, "needs a golden case")
        expected = case.all_expected_tools
        mode = case.trajectory_match
        nothing_more = mode in NOTHING_MORE
        if not expected and not case.forbidden_tools and not nothing_more:
            return skipped(self.name, "the case expects no tools")
        if unrecorded := tool_calls_unrecorded(self.name, trace):
            return unrecorded
        path = trajectory(trace, self.counting, case)
        actual = path.names
        forbidden = sorted({c.name for c in trace.tool_calls if c.name in case.forbidden_tools})
        hard = [f"called forbidden tool {name!r}" for name in forbidden]
        if mode == "subset":
            hard += [
                f"called {n!r}, outside the expected tools (subset)"
                for n in outside(expected, actual)
            ]
        if not expected and not nothing_more:
            return Score(
                self.name,
                0.0 if forbidden else 1.0,
                "; ".join(hard) or "no forbidden tool called",
                tuple(hard),
            )
        value, reason = name_credit(expected, actual, mode)
        details = {
            "mode": mode,
            "scope": case.tool_calls_scope,
            "expected": expected,
            "actual": actual,
            "depths": list(path.depths),
            "missing": list((Counter(expected) - Counter(actual)).elements()),
            "extra": list((Counter(actual) - Counter(expected)).elements()),
        }
        return Score(self.name, value, "; ".join([reason, *hard]), tuple(hard), details)


class _Checks:
    """The argument checks of (expected call, actual call) pairs under the case's argument
    modes, each pair checked once per scored trace (matching, strict-tool checks and credit
    all read the same pairs)."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self._done: dict[tuple[int, int], tuple[object, object, list[ArgumentCheck]]] = {}

    def __call__(self, expected: ExpectedToolCall, call: ToolCall) -> list[ArgumentCheck]:
        """:func:`check_arguments` of ``expected``'s rule (its ``arguments_match``) on
        ``call``'s arguments."""
        key = (id(expected), id(call))
        if (done := self._done.get(key)) is None:
            predicates, allow_extra = expected.rule(self.case.arguments_match)
            checks = check_arguments(predicates, call.arguments, allow_extra=allow_extra)
            done = self._done[key] = (expected, call, checks)  # the pair kept alive with its id
        return done[2]

    def full(self, expected: ExpectedToolCall, call: ToolCall) -> bool:
        """True when ``call`` satisfies every predicate of ``expected``."""
        return all(ch.passed for ch in self(expected, call))

    def weigh(self, expected: ExpectedToolCall, call: ToolCall) -> tuple[bool, float]:
        """(every predicate holds, the fraction that holds) of ``call`` for ``expected``."""
        done = self(expected, call)
        passed = sum(ch.passed for ch in done)
        return passed == len(done), passed / len(done) if done else 1.0


def _assign(
    expected: list[ExpectedToolCall], calls: list[ToolCall], checks: _Checks
) -> dict[int, int]:
    """expected index -> call index, by the best assignment
    (:func:`~tracegrade.scoring.trajectory.best_pairs`)."""
    return best_pairs(
        [e.name for e in expected],
        [c.name for c in calls],
        lambda i, j: checks.weigh(expected[i], calls[j]),
    )


def _strict_tools(case: Case) -> set[str]:
    """The tools whose every performed call must fully match an expected call: the case's
    ``strict_tools``, and under ``subset`` every expected tool."""
    strict = set(case.strict_tools)
    if case.trajectory_match == "subset":
        strict |= {c.name for c in case.expected_tool_calls}
    return strict


def _unexpected(
    case: Case,
    calls: list[ToolCall],
    assignment: dict[int, int],
    checks: _Checks,
    wrong: set[int],
) -> list[str]:
    """Performed calls of strict tools (:func:`_strict_tools`) that are not a full match of an
    expected call (a failed call changed nothing, so it never counts here), leaving out the
    calls in ``wrong`` (``id`` of calls reported as wrong-argument calls of an expected
    call)."""
    full = {j for i, j in assignment.items() if checks.full(case.expected_tool_calls[i], calls[j])}
    strict = _strict_tools(case)
    return [
        f"unexpected call {c.name}({_short(c.arguments)})"
        for j, c in enumerate(calls)
        if c.name in strict and j not in full and id(c) not in wrong
    ]


def _hard(expected: ExpectedToolCall, call: ToolCall | None, failures: list[str]) -> str:
    """The hard failure of an expected call not fully matched: not made, or the one call
    paired with it made with wrong (or unrecorded) arguments."""
    if call is None:
        return f"required call {expected.name} not made as expected"
    if not call.arguments_recorded:
        return f"required call {expected.name}: its arguments are not recorded"
    prefix = f"{expected.name}: "
    why = "; ".join(f.removeprefix(prefix) for f in failures)
    return f"wrong-argument call {call.name}({_short(call.arguments)}): {why}"


def _short(arguments: object, limit: int = 80) -> str:
    text = json.dumps(arguments, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _failure_text(expected: ExpectedToolCall, check: ArgumentCheck) -> str:
    return f"{expected.name}: argument {check.argument!r} {check.reason}"


@dataclass(frozen=True)
class ToolArguments:
    """Per expected call, the fraction of argument predicates its matched call satisfies."""

    counting: Counting = "performed"
    name: str = "tool_arguments"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if case is None or not (case.expected_tool_calls or case.strict_tools):
            return skipped(self.name, "the case gives no expected tool arguments")
        if unrecorded := tool_calls_unrecorded(self.name, trace):
            return unrecorded
        calls = list(trajectory(trace, self.counting, case).calls)
        checks = _Checks(case)
        expected_calls = case.expected_tool_calls
        assignment = _assign(expected_calls, calls, checks)
        wrong = {
            id(calls[j])
            for i, j in assignment.items()
            if not checks.full(expected_calls[i], calls[j])
        }
        performed = list(trajectory(trace, "performed", case).calls)
        strict_assignment = (
            assignment if performed == calls else _assign(expected_calls, performed, checks)
        )
        extra = _unexpected(case, performed, strict_assignment, checks, wrong)
        if not case.expected_tool_calls:
            return Score(
                self.name,
                0.0 if extra else 1.0,
                "; ".join(extra) or "no unexpected call of a strict tool",
                tuple(extra),
            )
        return self._credit(case, calls, assignment, checks, extra, trace)

    def _credit(
        self,
        case: Case,
        calls: list[ToolCall],
        assignment: dict[int, int],
        checks: _Checks,
        extra: list[str],
        trace: AgentTrace,
    ) -> Score:
        """The mean credit of the expected calls (under ``subset``, of those made; calls made
        whose arguments the trace does not carry are not scored: :func:`_unrecorded_reason`)."""
        subset = case.trajectory_match == "subset"
        strict = _strict_tools(case)
        credits: list[float] = []
        failures: list[str] = []
        hard = list(extra)
        per_call: list[dict[str, Any]] = []
        no_arguments: list[str] = []
        for i, expected in enumerate(case.expected_tool_calls):
            call = calls[assignment[i]] if i in assignment else None
            if subset and call is None and not expected.required:
                per_call.append({"name": expected.name, "credit": None, "failures": []})
                continue
            if call is not None and not call.arguments_recorded:
                no_arguments.append(expected.name)  # made; its arguments cannot be checked
                continue
            credit, call_failures = self._one(expected, call, checks)
            credits.append(credit)
            failures.extend(call_failures)
            per_call.append({"name": expected.name, "credit": credit, "failures": call_failures})
            made = call is not None and call.performed and call.name in strict
            if credit < 1.0 and (expected.required or made):
                hard.append(_hard(expected, call, call_failures))
        matched = sum(1 for c in credits if c == 1.0)
        if not credits and no_arguments:
            return skipped(self.name, _unrecorded_reason(no_arguments, trace))
        if not credits:  # subset: no expected call made, which it allows
            reason = "subset: none of the expected calls made"
            return Score(
                self.name, 1.0, "; ".join([reason, *hard]), tuple(hard), {"calls": per_call}
            )
        value = sum(credits) / len(credits)
        reason = f"{matched}/{len(credits)} expected call(s) made with all arguments right"
        if subset:
            reason += f" ({len(case.expected_tool_calls) - len(credits)} not made: subset)"
        if no_arguments:
            reason += f"; not checked: {_unrecorded_reason(no_arguments, trace)}"
        return Score(
            self.name, value, "; ".join([reason, *failures[:6]]), tuple(hard), {"calls": per_call}
        )

    @staticmethod
    def _one(
        expected: ExpectedToolCall, call: ToolCall | None, checks: _Checks
    ) -> tuple[float, list[str]]:
        if call is None:
            return 0.0, [f"{expected.name}: no matching call"]
        if not call.arguments_recorded:
            return 0.0, [f"{expected.name}: arguments not recorded"]
        done = checks(expected, call)
        if not done:
            return 1.0, []
        failed = [c for c in done if not c.passed]
        return (len(done) - len(failed)) / len(done), [_failure_text(expected, c) for c in failed]


def _unrecorded_reason(names: list[str], trace: AgentTrace) -> str:
    """Why the arguments of the calls to ``names`` were not checked: the trace's content gap
    (which names the switch) when content is not captured."""
    gap = trace.gap("message_content")
    why = gap.reason if gap else "no gen_ai.tool.call.arguments on their tool spans"
    return f"arguments of {', '.join(dict.fromkeys(names))} not recorded ({why})"


@register("tool_correctness")
def _tool_correctness(config: Config) -> ToolCorrectness:
    return ToolCorrectness(config.count_tool_calls)


@register("tool_arguments")
def _tool_arguments(config: Config) -> ToolArguments:
    return ToolArguments(config.count_tool_calls)
