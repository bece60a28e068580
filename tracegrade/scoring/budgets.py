"""Budgets: latency, cost, tokens and tool calls within limits.

Limits come from the config (``budgets:``, applied to every trace) and the case
(``max_latency_ms``, ``max_cost_usd``, ``max_tool_calls``, ``max_tokens``, and ``budgets:``
entries scoped to one agent's subtree or one tool). Each exceeded limit is a hard failure;
a limit the trace cannot be checked against (no timing, no price for the model) is reported
and not counted. The value is 1 when every checked limit holds, else 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tracegrade.config import Budgets, Config, Pricing
from tracegrade.dataset import Case
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.usage import Usage, measure, measure_agent, measure_tool
from tracegrade.trace import AgentTrace

Check = tuple[str, float | None, float]
"""(what, measured value or None if unmeasurable, limit)."""


def _limits(
    scope: str,
    usage: Usage,
    latency: float | None,
    cost: float | None,
    tokens: int | None,
    calls: int | None,
    calls_measured: int,
) -> Iterator[Check]:
    if latency is not None:
        yield f"{scope} latency_ms", usage.duration_ms, latency
    if cost is not None:
        yield f"{scope} cost_usd", usage.cost_usd, cost
    if tokens is not None:
        yield f"{scope} tokens", usage.total_tokens, tokens
    if calls is not None:
        yield f"{scope} tool calls", calls_measured, calls


@dataclass(frozen=True)
class BudgetCheck:
    """Every applicable budget holds (exceeding one is a hard failure)."""

    defaults: Budgets = field(default_factory=Budgets)
    pricing: Pricing = field(default_factory=Pricing)
    name: str = "budgets"

    def _checks(self, trace: AgentTrace, case: Case | None) -> list[Check]:
        limits = self.defaults
        if case is not None:
            limits = limits.merged(
                Budgets(
                    case.max_latency_ms, case.max_cost_usd, case.max_tool_calls, case.max_tokens
                )
            )
        usage = measure(trace, self.pricing)
        checks = list(
            _limits(
                "trace",
                usage,
                limits.max_latency_ms,
                limits.max_cost_usd,
                limits.max_tokens,
                limits.max_tool_calls,
                usage.tool_calls,
            )
        )
        for budget in case.budgets if case else ():
            if budget.agent is not None:
                scope, scoped = (
                    f"agent {budget.agent}",
                    measure_agent(trace, budget.agent, self.pricing),
                )
            else:  # a tool has no tokens or cost: reported as unmeasurable
                scope, scoped = f"tool {budget.tool}", measure_tool(trace, budget.tool or "")
            checks.extend(
                _limits(
                    scope,
                    scoped,
                    budget.max_latency_ms,
                    budget.max_cost_usd,
                    budget.max_tokens,
                    budget.max_calls,
                    scoped.tool_calls,
                )
            )
        return checks

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        checks = self._checks(trace, case)
        if not checks:
            return skipped(self.name, "no budget applies")
        measured = [(what, value, limit) for what, value, limit in checks if value is not None]
        unmeasured = [what for what, value, _ in checks if value is None]
        over = [f"{what} {value:g} > {limit:g}" for what, value, limit in measured if value > limit]
        notes = (
            [f"cannot check {', '.join(unmeasured)} (not recorded or no price)"]
            if unmeasured
            else []
        )
        if not measured:
            return skipped(self.name, notes[0])
        reason = "; ".join(over + notes) or f"{len(measured)} budget(s) within limits"
        details = {"checks": [{"budget": w, "measured": v, "limit": lim} for w, v, lim in checks]}
        return Score(
            self.name,
            0.0 if over else 1.0,
            reason,
            tuple(f"over budget: {o}" for o in over),
            details,
        )


@register("budgets")
def _budgets(config: Config) -> BudgetCheck:
    return BudgetCheck(config.budgets, config.pricing)
