"""What ``tracegrade mcp``'s tools answer, as plain functions of the store (and files): each
calls the use case a command or page calls, and returns JSON-ready data or text for a coding
agent to read. No MCP here (:mod:`.server` registers these with the SDK), so they are tested
and documented as Python.

Read-only: :func:`list_runs`, :func:`failed_cases`, :func:`compare_runs`, :func:`case_trace`,
:func:`lint_file`, :func:`score_file`, :func:`search_traces`. Writes (only with
``--allow-writes``): :func:`mark_baseline`, :func:`label_review_item`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from tracegrade.errors import ConfigError
from tracegrade.normalize.lint import lint
from tracegrade.pipeline._score import ScoreOptions, score
from tracegrade.pipeline.gate import CompareOptions, OutputOptions, compare
from tracegrade.pipeline.reading import load_batches, load_normalized, parse_since
from tracegrade.pipeline.review import LabelInput, queue_item, record_label
from tracegrade.pipeline.run_history import stored_overviews
from tracegrade.report.comparison import markdown
from tracegrade.run_document import read_cases, read_head
from tracegrade.store.runs import case_trace_ids, load_run, resolve_run, set_baseline
from tracegrade.store.search import TraceQuery
from tracegrade.store.traces import Store
from tracegrade.web.chat import Chat, build_chat
from tracegrade.web.trace_search import find_traces

MAX_ITEMS = 200
"""The most items (runs, cases, traces, lint reports) one answer lists."""


@dataclass(frozen=True)
class Tools:
    """The tools over one store (``db``: as ``--db``; None: the default store)."""

    db: str | None = None

    def list_runs(
        self, dataset: str | None = None, label: str | None = None, limit: int = 20
    ) -> list[dict[str, Any]]:
        """Stored runs, newest first: id, time, dataset, label, cases, pass rate, mean score,
        whether it is its dataset's baseline (as ``tracegrade runs --json``)."""
        with Store(self.db) as store:
            views = stored_overviews(store, dataset, label, min(limit, MAX_ITEMS))
        return [dataclasses.asdict(view) for view in views]

    def failed_cases(self, run: str = "latest") -> dict[str, Any]:
        """A stored run's failed cases with their reasons (``run``: an id or prefix, latest,
        latest~N or baseline).

        Raises:
            StoreError: no such run.
        """
        with Store(self.db) as store:
            doc = load_run(store, resolve_run(store, run))
        head = read_head(doc)
        failed = [c for c in read_cases(doc["cases"]) if not c.passed]
        return {
            "run_id": head.run.run_id,
            "dataset": head.run.dataset.name if head.run.dataset else None,
            "pass_rate": head.summary.pass_rate,
            "cases": head.summary.results,
            "failed": len(failed),
            "failed_cases": [
                {
                    "case_id": c.case_id,
                    "trace_id": c.trace_id,
                    "score": c.score,
                    "reasons": c.reasons,
                    "hard_failures": c.hard_failures,
                    "error": c.error,
                }
                for c in failed[:MAX_ITEMS]
            ],
        }

    def compare_runs(self, base: str = "baseline", current: str = "latest") -> str:
        """Two stored runs compared case by case (Markdown, as ``compare --markdown``):
        whether ``current`` regressed, which cases regressed or improved and why.

        Raises:
            StoreError, ConfigError: a run that does not exist; runs of different datasets.
        """
        compared = compare(CompareOptions(base, current, self.db))
        verdict = "REGRESSION" if compared.comparison.regression else "no regression"
        return f"{verdict}\n\n{markdown(compared.comparison)}"

    def case_trace(self, run: str, case_id: str) -> str:
        """A case's conversation as the dashboard's chat view shows it, as text: user
        messages, assistant replies, each tool call with its arguments and result.

        Raises:
            StoreError: no such run; ConfigError: no such case, or its trace is not stored.
        """
        with Store(self.db) as store:
            doc = load_run(store, resolve_run(store, run))
            case = next((c for c in read_cases(doc["cases"]) if str(c.case_id) == case_id), None)
            if case is None:
                raise ConfigError(f"run {run}: no case {case_id!r}")
            ids = case_trace_ids(case)
            found = load_normalized(store, ids)
        if not found:
            raise ConfigError(f"case {case_id!r}: its trace is not in the store")
        return chat_text(build_chat(list(found.values()), [t for t in ids if t not in found]))

    def lint_file(self, path: str, limit: int = 20) -> list[dict[str, Any]]:
        """Which scoring inputs each trace of a trace file provides, and why not (as ``tracegrade
        lint --json``)."""
        reports: list[dict[str, Any]] = []
        for batch in load_batches([path], None, "messages", limit=limit):
            reports += [lint(t).to_dict() for t in batch]
            if len(reports) >= min(limit, MAX_ITEMS):
                break
        return reports[: min(limit, MAX_ITEMS)]

    def score_file(self, path: str, dataset: str | None = None) -> dict[str, Any]:
        """Score a trace file against a golden dataset (a file, or ``store:NAME``; none: the
        reference-free scorers), without storing the run: the summary and the failed cases.

        Raises:
            ConfigError, DatasetError, InputError: as ``tracegrade score``.
        """
        options = ScoreOptions(
            files=[path], db=self.db, dataset=dataset, output=OutputOptions(save=False)
        )
        with score(options) as run:
            head = run.document.head
            failed = [c for c in run.document.cases if not c.passed]
        return {
            "summary": head.summary.model_dump(mode="json"),
            "failed_cases": [
                {"case_id": c.case_id, "trace_id": c.trace_id, "reasons": c.reasons}
                for c in failed[:MAX_ITEMS]
            ],
            "input_errors": [str(e) for e in run.input_errors],
        }

    def search_traces(
        self,
        text: str | None = None,
        tool: str | None = None,
        verdict: str | None = None,
        since: str | None = None,
    ) -> list[dict[str, Any]]:
        """Stored traces, newest first, as the dashboard's Traces page filters them: ``text`` in
        the user input, answer or tool arguments; a ``tool`` called; ``verdict`` pass, fail or
        unscored; started ``since`` (30m, 12h, 7d or an ISO date)."""
        if verdict not in (None, "pass", "fail", "unscored"):
            raise ConfigError(f"verdict {verdict!r}: use pass, fail or unscored")
        query = TraceQuery(
            since_unix_nano=parse_since(since),
            verdict=verdict,  # type: ignore[arg-type]
            tool=tool or None,
            text=text or None,
        )
        with Store(self.db) as store:
            found = find_traces(store, query)
        rows: list[dict[str, Any]] = json.loads(json.dumps(found.rows[:MAX_ITEMS], default=str))
        return rows

    # --- writes (--allow-writes) -----------------------------------------------------------

    def mark_baseline(self, run: str) -> str:
        """Mark a stored run as its dataset's baseline (replacing the previous one).

        Raises:
            StoreError: no such run, or a run without a dataset.
        """
        with Store(self.db) as store:
            run_id = resolve_run(store, run)
            dataset = set_baseline(store, run_id)
        return f"run {run_id} is now the baseline of dataset {dataset}"

    def label_review_item(
        self,
        queue: str,
        conversation: str,
        verdict: str,
        reviewer: str,
        note: str | None = None,
    ) -> str:
        """Label a review queue's item (its conversation) pass or fail, as a reviewer does in
        ``tracegrade review`` (the item is then done).

        Raises:
            ConfigError: a bad verdict; StoreError: no such queue item.
        """
        with Store(self.db) as store:
            item = queue_item(store, queue, conversation)
            label, new = record_label(
                store,
                LabelInput(
                    trace_ids=item.trace_ids,
                    reviewer=reviewer,
                    verdict=verdict,
                    note=note,
                    queue=queue,
                    conversation=conversation,
                    source="mcp",
                ),
            )
        state = "recorded" if new else "already recorded"
        return f"{label.verdict} on {conversation} in queue {queue} by {label.reviewer}: {state}"


def chat_text(chat: Chat) -> str:
    """The chat view as plain text: one block per message, tool calls indented beneath."""
    lines = [f"conversation {chat.conversation_id or '-'}; traces {', '.join(chat.trace_ids)}"]
    if chat.missing:
        lines.append(f"not in the store: {', '.join(chat.missing)}")
    for message in chat.messages:
        who = message.role + (f" ({message.model})" if message.model else "")
        who += " [final answer]" if message.final else ""
        lines += ["", f"{who}:"]
        if message.text:
            lines.append(message.text)
        for call in message.tool_calls:
            lines.append(f"  -> tool {call.name}({call.arguments or ''})")
            if call.error:
                lines.append(f"     error: {call.error}")
            elif call.result is not None:
                lines.append(f"     result: {call.result}")
        if message.error:
            lines.append(f"  error: {message.error}")
    return "\n".join(lines)
