"""Bounds on ``POST /v1/feedback`` (:mod:`.feedback_api`), so a hostile client cannot fill the
store or the pages with feedback:

- **per client** (the TCP peer's address): a token bucket of ``per_client_per_min`` requests
  a minute (that many at once, then one every ``60 / per_client_per_min`` s): beyond it,
  429 with ``Retry-After``;
- **per trace**: once this receiver has accepted ``per_trace`` feedback records about a trace,
  more answer 429 naming the trace and the bound (no ``Retry-After``: waiting does not help).
  The store keeps at most that many per trace whatever the path (OTLP logs, a span attribute,
  a restarted receiver: :data:`tracegrade.store.feedback.MAX_PER_TRACE`).

Both tables are bounded (:data:`TRACKED`, least recently used first out).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from tracegrade.store.feedback import MAX_PER_TRACE

PER_CLIENT_PER_MIN = 120
"""Feedback requests a client may send a minute, by default (``collect --feedback-rate``)."""
TRACKED = 65_536
"""Clients and traces each table remembers, at most."""


@dataclass(frozen=True)
class Refusal:
    """Why a feedback request is refused: the message, and when to retry (s; None: not)."""

    message: str
    retry_after_s: float | None = None


@dataclass
class FeedbackLimits:
    """The per-client and per-trace bounds (see the module docstring); thread-safe."""

    per_trace: int = MAX_PER_TRACE
    per_client_per_min: int = PER_CLIENT_PER_MIN
    _clients: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict)
    _traces: OrderedDict[str, int] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def admit_client(self, client: str, now: float | None = None) -> Refusal | None:
        """Take one request from ``client``'s bucket; a :class:`Refusal` when it is empty."""
        now = time.monotonic() if now is None else now
        rate_s = self.per_client_per_min / 60.0
        with self._lock:
            tokens, at = self._clients.pop(client, (float(self.per_client_per_min), now))
            tokens = min(float(self.per_client_per_min), tokens + (now - at) * rate_s)
            if tokens < 1.0:
                self._remember(self._clients, client, (tokens, now))
                return Refusal(
                    f"too much feedback from {client}: at most {self.per_client_per_min} requests"
                    " a minute (collect --feedback-rate)",
                    (1.0 - tokens) / rate_s,
                )
            self._remember(self._clients, client, (tokens - 1.0, now))
        return None

    def admit_trace(self, trace_id: str) -> Refusal | None:
        """Reserve one of ``trace_id``'s ``per_trace`` feedback records (:meth:`release` it
        when the record is not stored); a :class:`Refusal` when none is left."""
        with self._lock:
            taken = self._traces.pop(trace_id, 0)
            self._remember(self._traces, trace_id, min(taken + 1, self.per_trace))
            if taken < self.per_trace:
                return None
        return Refusal(
            f"trace {trace_id} has {self.per_trace} feedback records, the most kept per trace"
            " (collect --feedback-per-trace)"
        )

    def release(self, trace_id: str) -> None:
        """Give back a record :meth:`admit_trace` reserved (it was not stored)."""
        with self._lock:
            if self._traces.get(trace_id, 0) > 0:
                self._traces[trace_id] -= 1

    @staticmethod
    def _remember(table: OrderedDict, key: str, value: object) -> None:  # type: ignore[type-arg]
        table[key] = value
        while len(table) > TRACKED:
            table.popitem(last=False)
