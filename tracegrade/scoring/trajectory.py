"""The agent's trajectory: which tool calls count, at what depth, and how they match.

- **Depth.** A tool call made by a nested sub-agent (an agent used as a tool: its agent span
  inside another agent's tool call) counts with its depth: 0 for the outermost acting agent's
  calls (and calls outside any agent), 1 for those of an agent it called, and so on. Only
  agents that act count: an agent span with no LLM call or tool call of its own (the OpenAI
  Agents SDK's ``Agent workflow`` root, CrewAI's crew and task spans around the agent) wraps
  the agent that acts and adds no depth. From :attr:`~tracegrade.trace.AgentTrace.agents`
  (each agent's ``parent_agent_span_id``) and the ``agent_span_id`` of each tool call and LLM
  call. A case's ``tool_calls_scope: top_level`` keeps depth 0 only.
- **Names.** :func:`name_credit` scores the sequence of called names against the expected
  one under a ``tool_calls_match`` mode (:mod:`tracegrade.dataset.trajectories`).
- **Pairs.** :func:`best_pairs` pairs expected calls with actual calls of the same name by the
  best assignment (a maximum-weight bipartite matching: networkx's ``max_weight_matching``),
  never by order: first as many calls satisfying every predicate as possible, then the most
  predicates satisfied, then the earlier call. Repeated calls of one tool are paired this way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tracegrade.dataset import Case
from tracegrade.dataset.trajectories import NOTHING_MORE, ToolCallsMatch
from tracegrade.scoring.grounding import Counting, counted_calls
from tracegrade.trace import AgentTrace, ToolCall


def agent_depths(trace: AgentTrace) -> dict[str, int]:
    """Agent span id -> its nesting depth: how many acting agents (with an LLM call or a tool
    call of their own) enclose it; 0 for an outermost one (see the module docstring)."""
    parents = {a.span_id: a.parent_agent_span_id for a in trace.agents}
    acting = {c.agent_span_id for c in trace.tool_calls} | {
        c.agent_span_id for c in trace.llm_calls
    }
    depths: dict[str, int] = {}
    for span_id in parents:
        chain: list[str] = []
        current: str | None = span_id
        while current is not None and current in parents and current not in depths:
            if current in chain:  # a malformed cycle: count it as top level
                break
            chain.append(current)
            current = parents[current]
        # above the chain: an agent whose depth is known (one more if it acts), or nothing
        above = depths.get(current) if current is not None else None
        depth = 0 if above is None else above + (current in acting)
        for node in reversed(chain):
            depths[node] = depth
            depth += node in acting
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
    """(credit in [0, 1], reason) of the called names under ``mode`` (module docstring).
    With nothing expected, a mode that allows nothing more (:data:`~tracegrade.dataset.
    trajectories.NOTHING_MORE`) gives 0.0 for any call; the others 1.0."""
    if not expected:
        if not actual:
            return 1.0, f"{mode}: no tool called, none expected"
        if mode in NOTHING_MORE:
            return 0.0, f"{mode}: no tool call expected, made {list(actual)}"
        return 1.0, f"{mode}: no tool call expected"
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

_UNIT = 10**9
"""A pair's credit in integer units: the matching is computed on integers, exactly."""


def best_pairs(
    expected_names: Sequence[str], call_names: Sequence[str], weigh: Weight
) -> dict[int, int]:
    """Expected index -> call index, pairing calls of the same name by the best assignment
    (see the module docstring); an expected call left without a call of its name is absent.
    Only calls of one name can pair, so each name is matched apart."""
    pairs: dict[int, int] = {}
    for name in dict.fromkeys(expected_names):
        rows = [i for i, n in enumerate(expected_names) if n == name]
        cols = [j for j, n in enumerate(call_names) if n == name]
        if cols:
            pairs.update(_pair_one_name(rows, cols, len(call_names), weigh))
    return pairs


def _pair_one_name(rows: list[int], cols: list[int], calls: int, weigh: Weight) -> dict[int, int]:
    """The best assignment of the expected calls ``rows`` to the calls ``cols`` of one name:
    a maximum-weight matching (networkx's ``max_weight_matching``, Edmonds' blossom method,
    exact on integer weights) whose weights rank, in this order, more full matches, then more
    pairs and predicates satisfied, then earlier calls (``calls``: how many calls in all)."""
    size = min(len(rows), len(cols))
    order = size * calls + 1  # above any sum of the earlier-call terms (calls - j)
    full_bonus = (2 * _UNIT * size + 1) * order  # above any sum of the lower terms

    def weight(i: int, j: int) -> int:
        full, fraction = weigh(i, j)
        credit = _UNIT + round(fraction * _UNIT)
        return (full_bonus if full else 0) + credit * order + (calls - j)

    if len(rows) == 1 or len(cols) == 1:  # one pair at most: the best one
        i, j = max(((i, j) for i in rows for j in cols), key=lambda p: (weight(*p), -p[0]))
        return {i: j}
    import networkx as nx  # imported only when one tool has several expected and made calls

    graph = nx.Graph()
    for i in rows:
        for j in cols:
            graph.add_edge(("expected", i), ("call", j), weight=weight(i, j))
    pairs: dict[int, int] = {}
    for a, b in nx.max_weight_matching(graph):
        expected, call = (a, b) if a[0] == "expected" else (b, a)
        pairs[expected[1]] = call[1]
    return pairs
