"""The judge cache: verdicts kept in the trace store, so re-scoring stored traces costs nothing.

Key: sha256 of (model, the full prompt: system message, rubric and evidence, which is the
trace's inputs, tool calls and answer, the verdict schema, and the repetition number of
``--judge-repeat``). Any change to the model, the prompt wording, the rubric or what the
trace shows gives a new key; the same question asked again is answered from the table
``judge_cache`` (migration ``003_judge_cache``). Only valid verdicts are cached; judge
errors are retried on the next run.

Use from one thread: the store's connection is not shared across threads (the judge scorer
looks up and writes in the calling thread and only sends requests from its pool).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tracegrade.store.traces import Store

_SQL_GET = "SELECT verdict FROM judge_cache WHERE key = ?"
_SQL_PUT = (
    "INSERT INTO judge_cache"
    " (key, model, rubric, verdict, input_tokens, output_tokens, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING"
)


def cache_key(
    model: str, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], repetition: int
) -> str:
    """The cache key of one judge question (hex sha256; see the module docstring)."""
    payload = json.dumps(
        {"model": model, "messages": list(messages), "schema": schema, "repetition": repetition},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache:
    """Verdicts by key, in ``store`` (or in memory when ``store`` is None)."""

    def _redacted(self, verdict: Mapping[str, Any]) -> Any:
        redactor = self.store.redactor if self.store is not None else None
        return dict(verdict) if redactor is None else redactor.data(dict(verdict))

    def __init__(self, store: Store | None = None):
        self.store = store
        self._memory: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached verdict (a :class:`~tracegrade.judge.rubrics.Verdict` as a dict), if any."""
        if self.store is None:
            return self._memory.get(key)
        row = self.store.db.execute(_SQL_GET, (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(
        self,
        key: str,
        model: str,
        rubric: str,
        verdict: Mapping[str, Any],
        input_tokens: int,
        output_tokens: int,
    ) -> None:
        """Keep a verdict (a second write of the same key keeps the first). In the store, its
        text is redacted first (the reasoning may quote the trace: :attr:`Store.redactor`)."""
        if self.store is None:
            self._memory.setdefault(key, dict(verdict))
            return
        with self.store.db:
            self.store.db.execute(
                _SQL_PUT,
                (
                    key,
                    model,
                    rubric,
                    json.dumps(self._redacted(verdict), ensure_ascii=False),
                    input_tokens,
                    output_tokens,
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        if self.store is None:
            return len(self._memory)
        return int(self.store.db.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])
