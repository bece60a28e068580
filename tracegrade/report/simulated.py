"""The console lines of simulated conversations (``tracegrade run`` with a case's ``user``).

Per attempt: who played the user, whether the goal was reached, in how many of ``max_turns``
turns, why the conversation ended, and the facts the agent asked for again. For the run: the
goal-reached rate over every simulated conversation with its 95% interval, and what the
simulated user's model spent, apart from the agent's tokens and cost (``summary.simulator``).
Read from the run document's attempts (``simulation``) and summary (``simulated``,
``simulator``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape

from tracegrade.run_document import CaseEntry, RunSummaryEntry

_ENDED = {
    "gave_up": "the simulated user gave up",
    "max_turns": "max_turns reached",
    "error": "the simulated user failed",
}


def _clip(text: str, limit: int = 220) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def attempt_line(case_id: str, simulation: Mapping[str, Any], repeat: int | None) -> str:
    """One simulated conversation: goal, turns, why, facts asked again."""
    who = f"simulated user {escape(case_id)}" + (f" #{repeat}" if repeat else "")
    turns = f"{simulation.get('turns', 0)}/{simulation.get('max_turns', '?')} turn(s)"
    ended = simulation.get("ended_by")
    player = escape(str(simulation.get("simulator")))
    if ended is None:
        return f"[red]{who}: the conversation did not finish ({player})[/]"
    if ended == "goal":
        line = f"[green]{who}: goal reached in {turns}[/]"
    else:
        line = f"[red]{who}: goal not reached after {turns} ({_ENDED[ended]})[/]"
    line += f" ({player}) — {escape(_clip(str(simulation.get('reason', ''))))}"
    asked = simulation.get("asked_again") or []
    if asked:
        said = "; ".join(
            f"{a['fact']} (given at turn {a['given_at']}, asked again at turn {a['asked_at']})"
            for a in asked
        )
        line += f"; [yellow]the agent asked again for {escape(said)}[/]"
    return line


def case_lines(case: CaseEntry) -> list[str]:
    """A case's simulated conversations, one line per attempt that had one."""
    repeated = len(case.attempts) > 1
    return [
        attempt_line(str(case.case_id), a.simulation, a.repeat if repeated else None)
        for a in case.attempts
        if a.simulation
    ]


def summary_texts(
    simulated: Mapping[str, Any] | None, spent: Mapping[str, Any] | None
) -> list[str]:
    """The run's goal-reached rate (with its interval) and the simulator's spending, as plain
    text: from the summary's ``simulated`` and ``simulator`` (either may be None)."""
    lines = []
    if simulated and simulated.get("conversations"):
        interval = (
            f" (95% interval {simulated['low']:.0%}–{simulated['high']:.0%})"
            if simulated.get("low") is not None
            else " (its interval: pip install 'tracegrade[stats]')"
        )
        lines.append(
            f"simulated users: goal reached in {simulated['reached']}/"
            f"{simulated['conversations']} conversation(s), {simulated['rate']:.0%}{interval}"
            f" · mean turns {simulated.get('turns_mean')}"
        )
    if spent:
        cost = spent.get("cost_usd")
        lines.append(
            f"simulator {spent.get('model')}: {spent['calls']} call(s) "
            f"({spent['cached']} step(s) from cache) · tokens {spent['input_tokens']:,} in / "
            f"{spent['output_tokens']:,} out · est. cost "
            + ("n/a" if cost is None else f"${cost:,.4f}")
            + " (apart from the agent's)"
        )
    return lines


def summary_lines(summary: RunSummaryEntry) -> list[str]:
    """:func:`summary_texts` of a run summary, as console markup."""
    texts = summary_texts(getattr(summary, "simulated", None), getattr(summary, "simulator", None))
    return [escape(text) for text in texts]
