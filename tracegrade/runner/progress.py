"""Progress of a run on stderr: a rich progress bar with passed/failed counts on a terminal;
in CI logs (not a terminal) one line per finished attempt and nothing else."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from tracegrade.runner.execute import FinishedAttempt


def _line(outcome: FinishedAttempt, repeat: int, markup: bool) -> str:
    result = outcome.result
    verdict = (
        ("[green]PASS[/]" if result.passed else "[red]FAIL[/]")
        if markup
        else ("PASS" if result.passed else "FAIL")
    )
    which = f" (repeat {outcome.repeat}/{repeat})" if repeat > 1 else ""
    score = "n/a" if result.score is None else f"{result.score:.2f}"
    first = next(iter(result.reasons[0].strip().splitlines()), "") if result.reasons else ""
    why = "" if result.passed or not first else f": {first}"
    why = why if len(why) <= 200 else why[:199] + "…"
    text = f"{outcome.case.id}{which} score {score} in {outcome.agent_ms / 1000:.2f} s{why}"
    return f"{verdict} {escape(text) if markup else text}"


class RunProgress:
    """Use as a context manager around the run and pass :meth:`finished` as the runner's
    listener. ``verbose`` prints the per-attempt lines on a terminal too."""

    def __init__(
        self, total: int, repeat: int = 1, *, console: Console | None = None, verbose: bool = False
    ):
        self.console = console or Console(stderr=True)
        self.total, self.repeat, self.verbose = total, repeat, verbose
        self.passed = self.failed = 0
        self.progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        if self.console.is_terminal:
            self.progress = Progress(
                TextColumn("running"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(
                    "[green]{task.fields[passed]} passed[/] [red]{task.fields[failed]} failed[/]"
                ),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self._task = self.progress.add_task("run", total=self.total, passed=0, failed=0)
        return self

    def finished(self, outcome: FinishedAttempt) -> None:
        """Count one finished attempt and show it."""
        if outcome.result.passed:
            self.passed += 1
        else:
            self.failed += 1
        if self.progress is not None and self._task is not None:
            self.progress.update(self._task, advance=1, passed=self.passed, failed=self.failed)
            if self.verbose:
                self.progress.console.print(_line(outcome, self.repeat, True))
        else:
            self.console.print(
                _line(outcome, self.repeat, False), markup=False, highlight=False, soft_wrap=True
            )

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.stop()
