"""The trajectory vocabulary of other evaluators, as a case states it.

A case says how the agent's tool calls are matched against its expected ones
(``tool_calls_match``) and, per expected call, how arguments are compared
(``arguments_match``). The names are those of LangChain agentevals
(``trajectory_match_mode``, ``tool_args_match_mode``), Google ADK (``match_type``) and AWS
AgentCore (``Builtin.Trajectory*Match``), mapped onto tracegrade's scorers
(``tool_correctness`` for the names and their order, ``tool_arguments`` for the arguments;
docs/guides/trajectories.md puts the names side by side):

``tool_calls_match``
    - ``exact``: the same calls in the same order, nothing more (the credit is the longest
      common subsequence over the longer sequence, so extras and gaps cost);
    - ``in_order``: the expected calls in their order, other calls allowed between them;
    - ``any_order``: the same calls in any order, nothing more or missing (the multiset
      intersection over the larger count);
    - ``superset``: every expected call, in any order, others allowed (the default: the case
      field ``order: any``);
    - ``subset``: no call outside the expected list (a hard failure, naming the call);
      expected calls may be left out.

    With no expected tool, the modes that allow nothing more (``exact``, ``any_order``,
    ``subset``: :data:`NOTHING_MORE`) mean that the agent calls no tool; ``in_order`` and
    ``superset`` expect nothing, and the case's tool names are not scored.

``arguments_match`` (per expected call; the case's ``arguments_match`` is the default)
    - ``superset`` (default): every stated argument as stated; others allowed;
    - ``exact``: every stated argument as stated, and no other;
    - ``subset``: the call may leave out stated arguments, but passes no other, and the ones
      it passes hold;
    - ``ignore``: arguments are not compared;
    - a list of argument names: only those are compared (each must be stated).

:func:`argument_rule` turns a call's mode into the predicates and the extra-argument rule the
``tool_arguments`` scorer checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

from tracegrade.dataset.predicates import Predicate

ToolCallsMatch = Literal["exact", "in_order", "any_order", "subset", "superset"]
NOTHING_MORE: frozenset[str] = frozenset({"exact", "any_order", "subset"})
"""The ``tool_calls_match`` modes under which a call beyond the expected ones costs: with no
expected tool they mean that no tool may be called."""
ArgumentsMode = Literal["exact", "ignore", "subset", "superset"]
ArgumentsMatch: TypeAlias = ArgumentsMode | list[str]
ToolCallsScope = Literal["all", "top_level"]

ORDER_TO_MATCH: Mapping[str, ToolCallsMatch] = {
    "any": "superset",
    "in_order": "in_order",
    "exact": "exact",
}
"""The case field ``order`` in this vocabulary (``order`` predates it and stays valid)."""


def optional(predicate: Predicate) -> Predicate:
    """``predicate`` with the argument allowed to be left out."""
    return Predicate({**predicate.operators, "optional": True})


def argument_rule(
    predicates: Mapping[str, Predicate], mode: ArgumentsMatch, allow_extra: bool = True
) -> tuple[dict[str, Predicate], bool]:
    """The predicates to check and whether arguments they do not name are allowed, for an
    expected call's ``predicates`` under ``mode`` (see the module docstring);
    ``allow_extra`` is the call's ``allow_extra_arguments``, which ``superset`` keeps."""
    if isinstance(mode, list):
        return {name: predicates[name] for name in mode if name in predicates}, True
    if mode == "ignore":
        return {}, True
    if mode == "exact":
        return dict(predicates), False
    if mode == "subset":
        return {name: optional(p) for name, p in predicates.items()}, False
    return dict(predicates), allow_extra


def describe_arguments_match(mode: ArgumentsMatch) -> str:
    """A short form for reasons: ``exact``, or ``fields [a, b]``."""
    return f"fields {mode}" if isinstance(mode, list) else mode
