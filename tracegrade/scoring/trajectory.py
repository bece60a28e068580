"""The agent's trajectory: which tool calls count, at what depth, and how they match.

- **Depth.** A tool call made by a nested sub-agent (an agent used as a tool: its agent span
  inside another agent's tool call) counts with its depth: 0 for the outermost agent's own
  calls (and calls outside any agent), 1 for those of an agent it called, and so on, from
  :attr:`~tracegrade.trace.AgentTrace.agents` (each agent's ``parent_agent_span_id``) and each
  call's ``agent_span_id``. A case's ``tool_calls_scope: top_level`` keeps depth 0 only.
- **Names.** :func:`name_credit` scores the sequence of called names against the expected
  one under a ``tool_calls_match`` mode (:mod:`tracegrade.dataset.trajectories`).
- **Pairs.** :func:`best_pairs` pairs expected calls with actual calls of the same name by the
  best assignment (bipartite: munkres' ``linear_sum_assignment``, scipy's), never by order:
  first as many calls satisfying every predicate as possible, then the most predicates
  satisfied, then the earlier call. Repeated calls of one tool are paired this way too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tracegrade.dataset import Case
from tracegrade.dataset.trajectories import ToolCallsMatch
from tracegrade.scoring.grounding import Counting, counted_calls
from tracegrade.trace import AgentTrace, ToolCall


def agent_depths(trace: AgentTrace) -> dict[str, int]:
    """Agent span id -> its nesting depth (0: an outermost agent)."""
    parents = {a.span_id: a.parent_agent_span_id for a in trace.agents}
    depths: dict[str, int] = {}
    for span_id in parents:
        chain: list[str] = []
        current: str | None = span_id
        while current is not None and current in parents and current not in depths:
            if current in chain:  # a malformed cycle: count it as top level
                break
            chain.append(current)
            current = parents[current]
        base = depths.get(current, -1) if current is not None else -1
        for offset, node in enumerate(reversed(chain), start=1):
            depths[node] = base + offset
    return depths


def call_depth(call: ToolCall, depths: Mapping[str, int]) -> int:
    """The call's depth: its agent's (0 when it has none or the agent is unknown)."""
    return depths.get(call.agent_span_id or "", 0)


@dataclass(frozen=True)
class Trajectory:
    """The tool calls matched against a case, in execution order, with each one's depth."""

    calls: tuple[ToolCall, ...]
    depths: tuple[int, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.calls]


def trajectory(trace: AgentTrace, counting: Counting, case: Case | None = None) -> Trajectory:
    """The counted calls (:func:`~tracegrade.scoring.grounding.counted_calls`), only the top
    level ones when the case's ``tool_calls_scope`` is ``top_level``."""
    depths = agent_depths(trace)
    calls = counted_calls(trace, counting)
    pairs = [(c, call_depth(c, depths)) for c in calls]
    if case is not None and case.tool_calls_scope == "top_level":
        pairs = [(c, d) for c, d in pairs if d == 0]
    return Trajectory(tuple(c for c, _ in pairs), tuple(d for _, d in pairs))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two name sequences."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def outside(expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """The actual names not in the expected list (``subset``), in call order, once each."""
    allowed = set(expected)
    return list(dict.fromkeys(n for n in actual if n not in allowed))


def name_credit(
    expected: Sequence[str], actual: Sequence[str], mode: ToolCallsMatch
) -> tuple[float, str]:
    """(credit in [0, 1], reason) of the called names under ``mode`` (module docstring)."""
    matched = sum((Counter(expected) & Counter(actual)).values())
    if mode == "superset":
        missing = list((Counter(expected) - Counter(actual)).elements())
        reason = f"{matched}/{len(expected)} expected tool call(s) made"
        return matched / len(expected), reason + (f"; missing {missing}" if missing else "")
    if mode == "any_order":
        larger = max(len(expected), len(actual))
        same = "the same calls" if matched == larger else f"{matched} of {larger} calls in common"
        return matched / larger, f"any order: {same} (expected {len(expected)}, made {len(actual)})"
    if mode == "subset":
        if not actual:
            return 1.0, "subset: no tool called"
        within = sum((Counter(actual) & Counter(expected)).values())
        return within / len(actual), f"subset: {within}/{len(actual)} call(s) within the list"
    common = lcs_length(expected, actual)
    if mode == "in_order":
        return common / len(
            expected
        ), f"{common}/{len(expected)} expected tool call(s) made in order"
    exact = "exactly" if list(expected) == list(actual) else f"not exactly (actual {list(actual)})"
    return common / max(len(expected), len(actual)), f"tool sequence matches {exact}"


Weight = Callable[[int, int], tuple[bool, float]]
"""(expected index, call index) -> (all predicates hold, fraction of predicates that hold)."""


def best_pairs(
    expected_names: Sequence[str], call_names: Sequence[str], weigh: Weight
) -> dict[int, int]:
    """Expected index -> call index, pairing calls of the same name by the best assignment
    (see the module docstring); an expected call left without a call of its name is absent."""
    # munkres: scipy's linear_sum_assignment without numpy/scipy in the base install
    from munkres import linear_sum_assignment

    if not expected_names or not call_names:
        return {}
    size = min(len(expected_names), len(call_names))
    full_bonus = 2.0 * (size + 1)  # one more full match outweighs every partial credit
    order_step = 1.0 / (4.0 * (len(call_names) + 1) * (size + 1))  # ties go to earlier calls
    weights = [[0.0] * len(call_names) for _ in expected_names]
    for i, name in enumerate(expected_names):
        for j, other in enumerate(call_names):
            if name == other:
                full, fraction = weigh(i, j)
                weights[i][j] = 1.0 + fraction + (full_bonus if full else 0.0) - j * order_step
    rows, cols = linear_sum_assignment(weights, maximize=True)
    return {int(i): int(j) for i, j in zip(rows, cols, strict=True) if weights[int(i)][int(j)] > 0}
