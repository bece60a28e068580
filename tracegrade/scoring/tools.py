"""Tool use: the right tools, in the right order, with the right arguments.

- ``tool_correctness``: partial credit over the expected tools (``expected_tools`` plus the
  names of ``expected_tool_calls``), as a multiset, so one call never satisfies two expected
  ones; extra calls are not penalised. With ``order: in_order`` the credit is the longest
  common subsequence of expected and actual names over the expected count; with ``exact`` it
  is over the longer of the two, so extras cost. A call to a ``forbidden_tools`` entry is a
  hard failure.
- ``tool_arguments``: each expected call is paired with a distinct actual call of the same
  name (first every call that satisfies all its predicates, by bipartite matching; then the
  best partial matches); its credit is the fraction of predicates satisfied, 0 when no call
  is left. The reasons name each failed argument and the value it had. An expected call
  marked ``required`` that no call fully satisfies is a hard failure, and so is a call of a
  ``strict_tools`` entry that is not a full match of some expected call (an extra write).
  Each call is reported once: a call paired with an expected call whose arguments are wrong
  is one "wrong-argument call" (hard when the expected call is required or the tool strict),
  never also an "unexpected call" and a "required call not made".

Both count performed calls by default (``count_tool_calls`` in the config): a call that
failed did not do the work.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tracegrade.config import Config
from tracegrade.dataset import Case, ExpectedToolCall
from tracegrade.dataset.predicates import ArgumentCheck, check_arguments
from tracegrade.scoring.grounding import Counting, counted_calls, tool_calls_unrecorded
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.trace import AgentTrace, ToolCall


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two name sequences."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class ToolCorrectness:
    """Expected tools called (multiset, partial credit, optional order), none forbidden."""

    counting: Counting = "performed"
    name: str = "tool_correctness"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if case is None:
            return skipped(self.name, "needs a golden case")
        expected = case.all_expected_tools
        if not expected and not case.forbidden_tools:
            return skipped(self.name, "the case expects no tools")
        if unrecorded := tool_calls_unrecorded(self.name, trace):
            return unrecorded
        actual = [c.name for c in counted_calls(trace, self.counting)]
        forbidden = sorted({c.name for c in trace.tool_calls if c.name in case.forbidden_tools})
        hard = tuple(f"called forbidden tool {name!r}" for name in forbidden)
        if not expected:
            return Score(
                self.name,
                0.0 if forbidden else 1.0,
                "; ".join(hard) or "no forbidden tool called",
                hard,
            )
        value, reason = self._credit(expected, actual, case.order)
        missing = list((Counter(expected) - Counter(actual)).elements())
        details = {
            "expected": expected,
            "actual": actual,
            "missing": missing,
            "extra": list((Counter(actual) - Counter(expected)).elements()),
        }
        return Score(self.name, value, "; ".join([reason, *hard]), hard, details)

    @staticmethod
    def _credit(expected: list[str], actual: list[str], order: str) -> tuple[float, str]:
        if order == "any":
            matched = sum((Counter(expected) & Counter(actual)).values())
            missing = list((Counter(expected) - Counter(actual)).elements())
            reason = f"{matched}/{len(expected)} expected tool call(s) made"
            return matched / len(expected), reason + (f"; missing {missing}" if missing else "")
        common = lcs_length(expected, actual)
        if order == "in_order":
            return common / len(
                expected
            ), f"{common}/{len(expected)} expected tool call(s) made in order"
        denominator = max(len(expected), len(actual))
        exact = "exactly" if list(expected) == list(actual) else f"not exactly (actual {actual})"
        return common / denominator, f"tool sequence matches {exact}"


class _Checks:
    """The argument checks of (expected call, actual call) pairs, each pair checked once per
    scored trace (matching, strict-tool checks and credit all read the same pairs)."""

    def __init__(self) -> None:
        self._done: dict[tuple[int, int], tuple[object, object, list[ArgumentCheck]]] = {}

    def __call__(self, expected: ExpectedToolCall, call: ToolCall) -> list[ArgumentCheck]:
        """:func:`check_arguments` of ``expected``'s predicates on ``call``'s arguments."""
        key = (id(expected), id(call))
        if (done := self._done.get(key)) is None:
            checks = check_arguments(
                expected.predicates, call.arguments, allow_extra=expected.allow_extra_arguments
            )
            done = self._done[key] = (expected, call, checks)  # the pair kept alive with its id
        return done[2]

    def full(self, expected: ExpectedToolCall, call: ToolCall) -> bool:
        """True when ``call`` satisfies every predicate of ``expected``."""
        return all(ch.passed for ch in self(expected, call))

    def satisfied(self, expected: ExpectedToolCall, call: ToolCall) -> int:
        """How many predicates of ``expected`` ``call`` satisfies."""
        return sum(ch.passed for ch in self(expected, call))


def _assign(
    expected: list[ExpectedToolCall], calls: list[ToolCall], checks: _Checks
) -> dict[int, int]:
    """expected index -> call index: full matches by bipartite matching, then best partials."""
    full = {
        (i, j)
        for i, e in enumerate(expected)
        for j, c in enumerate(calls)
        if c.name == e.name and checks.full(e, c)
    }
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in range(len(calls)):
            if (i, j) in full and j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    assignment = {i: j for j, i in owner.items()}
    for i, e in enumerate(expected):
        if i in assignment:
            continue
        free = [j for j, c in enumerate(calls) if c.name == e.name and j not in assignment.values()]
        if free:
            assignment[i] = max(free, key=lambda j: (checks.satisfied(e, calls[j]), -j))
    return assignment


def _unexpected(
    case: Case,
    calls: list[ToolCall],
    assignment: dict[int, int],
    checks: _Checks,
    wrong: set[int],
) -> list[str]:
    """Performed calls of ``strict_tools`` that are not a full match of an expected call
    (a failed call changed nothing, so it never counts here), leaving out the calls in
    ``wrong`` (``id`` of calls reported as wrong-argument calls of an expected call)."""
    full = {j for i, j in assignment.items() if checks.full(case.expected_tool_calls[i], calls[j])}
    return [
        f"unexpected call {c.name}({_short(c.arguments)})"
        for j, c in enumerate(calls)
        if c.name in case.strict_tools and j not in full and id(c) not in wrong
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
        calls = counted_calls(trace, self.counting)
        checks = _Checks()
        expected_calls = case.expected_tool_calls
        assignment = _assign(expected_calls, calls, checks)
        wrong = {
            id(calls[j])
            for i, j in assignment.items()
            if not checks.full(expected_calls[i], calls[j])
        }
        performed = counted_calls(trace, "performed")
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
        credits, failures, hard, per_call = [], [], list(extra), []
        for i, expected in enumerate(case.expected_tool_calls):
            call = calls[assignment[i]] if i in assignment else None
            credit, call_failures = self._one(expected, call, checks)
            credits.append(credit)
            failures.extend(call_failures)
            per_call.append({"name": expected.name, "credit": credit, "failures": call_failures})
            strict = call is not None and call.performed and call.name in case.strict_tools
            if credit < 1.0 and (expected.required or strict):
                hard.append(_hard(expected, call, call_failures))
        value = sum(credits) / len(credits)
        matched = sum(1 for c in credits if c == 1.0)
        reason = f"{matched}/{len(credits)} expected call(s) made with all arguments right"
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


@register("tool_correctness")
def _tool_correctness(config: Config) -> ToolCorrectness:
    return ToolCorrectness(config.count_tool_calls)


@register("tool_arguments")
def _tool_arguments(config: Config) -> ToolArguments:
    return ToolArguments(config.count_tool_calls)
