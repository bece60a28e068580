"""One OTLP export, protocol-neutral: authenticate, admit, queue, wait for the commit, answer.

The gRPC and HTTP front ends (:mod:`.grpc_front`, :mod:`.http_front`) only move bytes and map
an :class:`Outcome` to their protocol (OTLP specification, "OTLP/gRPC" and "OTLP/HTTP"):

============== ======================== ===========================
outcome        gRPC status              HTTP status
============== ======================== ===========================
ok             OK (+ partial_success)   200 (+ partial_success)
invalid        INVALID_ARGUMENT         400
unauthorized   UNAUTHENTICATED          401
too_large      RESOURCE_EXHAUSTED       413
throttled      RESOURCE_EXHAUSTED +     429 + Retry-After
               RetryInfo
unavailable    UNAVAILABLE + RetryInfo  503 + Retry-After
============== ======================== ===========================
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tracegrade.collector.admission import Admitted, Encoding, Redactor, Signal, admit
from tracegrade.collector.compact import TooManyEntries, count_items, drop_empty_entries
from tracegrade.collector.ingest import Ingest, QueueFull, Stopped, Unstorable
from tracegrade.collector.memory import BYTES_PER_ITEM, MemoryBudget, decode_cost
from tracegrade.errors import OtlpDecodeError, StoreError

DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
COMMIT_TIMEOUT_S = 30.0
UNAVAILABLE_RETRY_S = 2.0
MEMORY_RETRY_S = 1.0
ADMISSION_SLOTS = 4
"""Requests decoded, validated and prepared at once (the work holds the GIL)."""
ADMISSION_WAIT_S = 1.0
"""Longest wait for an admission slot before the request is refused with a retry delay."""
INLINE_ADMISSION_BYTES = 256 * 1024
"""Protobuf requests up to this size are admitted on the front end's event loop thread
(:meth:`ExportService.start` with ``inline``; about 0.3 ms per 100 spans), not handed to a
worker thread: the hand-off and the worker's wait for the GIL cost more than admitting them
(15-20% more spans/s with 100-span requests, same clients back to back: OTLP/HTTP 100-105k to
120-128k, OTLP/gRPC 80-85k to 92-97k)."""

Kind = Literal["ok", "invalid", "unauthorized", "too_large", "throttled", "unavailable"]


@dataclass(frozen=True)
class Outcome:
    """The result of one export: ``response`` (an ``Export*ServiceResponse``) when ``kind`` is
    ok, else ``message`` says why and ``retry_after_s`` how long to back off (throttled,
    unavailable)."""

    kind: Kind
    response: Any = None
    message: str = ""
    retry_after_s: float | None = None


def _response(admitted: Admitted) -> Any:
    if admitted.signal == "traces":
        response = ExportTraceServiceResponse()
        if admitted.rejected:
            response.partial_success.rejected_spans = admitted.rejected
            response.partial_success.error_message = admitted.message
        return response
    if admitted.signal == "logs":
        response = ExportLogsServiceResponse()
        if admitted.rejected:
            response.partial_success.rejected_log_records = admitted.rejected
            response.partial_success.error_message = admitted.message
        return response
    return ExportMetricsServiceResponse()


class ExportService:
    """Handles exports for both front ends. ``token``: the bearer token every request must
    carry in its ``authorization`` header / metadata (None: no authentication)."""

    def __init__(
        self,
        ingest: Ingest,
        *,
        token: str | None = None,
        redactor: Redactor | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        memory: MemoryBudget | None = None,
    ):
        self.ingest = ingest
        self.token = token
        self.redactor = redactor
        self.max_request_bytes = max_request_bytes
        self.memory = memory or MemoryBudget()
        self._admitting = threading.BoundedSemaphore(ADMISSION_SLOTS)

    def authorized(self, authorization: str | None) -> bool:
        """True when no token is set or ``authorization`` is ``Bearer <token>`` (compared in
        constant time)."""
        if self.token is None:
            return True
        return hmac.compare_digest((authorization or "").encode(), f"Bearer {self.token}".encode())

    def export(
        self, signal: Signal, body: bytes, encoding: Encoding, authorization: str | None
    ) -> Outcome:
        """Handle one export request end to end; blocks until the data is committed."""
        started = self.start(signal, body, encoding, authorization)
        if isinstance(started, Outcome):
            return started
        with contextlib.suppress(Exception):  # the outcome says what went wrong
            started.future.result(timeout=COMMIT_TIMEOUT_S)
        return started.outcome()

    def start(
        self,
        signal: Signal,
        body: bytes,
        encoding: Encoding,
        authorization: str | None,
        answer_by: float | None = None,
        *,
        inline: bool = False,
    ) -> Outcome | Pending:
        """Check, admit and queue one export request: its :class:`Outcome` when it is answered
        before the store (refused, invalid, nothing to store), else a :class:`Pending` whose
        commit the caller waits for (in a thread, or awaited by an event loop: no thread
        then sits blocked per request) before :meth:`Pending.outcome`. ``answer_by``: when
        the client stops waiting (``time.monotonic()``; see :attr:`Admitted.answer_by`).
        ``inline``: the caller is an event loop admitting a small request itself (see
        :func:`admits_inline`), which never waits for an admission slot."""
        if not self.authorized(authorization):
            return Outcome("unauthorized", message="missing or wrong bearer token")
        if len(body) > self.max_request_bytes:
            return Outcome(
                "too_large",
                message=f"request of {len(body)} bytes exceeds {self.max_request_bytes}",
            )
        items = 0
        if encoding == "protobuf":
            try:
                body = drop_empty_entries(body)
            except TooManyEntries as exc:
                return Outcome("invalid", message=str(exc))
            items = count_items(body, self.memory.limit_bytes // BYTES_PER_ITEM)
        cost = decode_cost(body, encoding, items)
        if cost > self.memory.limit_bytes:
            return Outcome(
                "too_large",
                message=f"decoding this request would take about {cost / 2**20:.0f} MiB, over "
                f"the receiver's memory bound of {self.memory.limit_bytes / 2**20:.0f} MiB; "
                "send smaller batches",
            )
        if not self.memory.reserve(cost, admit=False):  # the front end admitted it
            return Outcome(
                "throttled",
                message="the receiver is at its memory bound; retry later",
                retry_after_s=MEMORY_RETRY_S,
            )
        try:
            result = self._admit(signal, body, encoding, answer_by, inline)
        except BaseException:
            self.memory.release(cost)
            raise
        if isinstance(result, Outcome):
            self.memory.release(cost)
        else:
            result.release = lambda: self.memory.release(cost)
        return result

    def _admit(
        self, signal: Signal, body: bytes, encoding: Encoding, answer_by: float | None, inline: bool
    ) -> Outcome | Pending:
        # Decoding holds the GIL: more at once only makes each slower, and a request that
        # cannot start soon is refused rather than acknowledged after its client gave up.
        # (A small request admitted inline takes no slot: an event loop's thread admits one
        # at a time, in about a millisecond, and must not block waiting for a slot.)
        slot = not inline
        if slot and not self._admitting.acquire(timeout=ADMISSION_WAIT_S):
            return Outcome(
                "throttled",
                message="the receiver is busy decoding other requests; retry later",
                retry_after_s=MEMORY_RETRY_S,
            )
        try:
            admitted = admit(signal, body, encoding, self.redactor)
        except OtlpDecodeError as exc:
            return Outcome("invalid", message=str(exc))
        finally:
            if slot:
                self._admitting.release()
        if signal == "metrics" or not admitted.items:
            return Outcome("ok", _response(admitted))
        admitted.answer_by = answer_by
        if signal == "traces":  # stored from its prepared rows: the decoded message can go
            admitted.request = None
        return self._store(admitted)

    def _store(self, admitted: Admitted) -> Outcome | Pending:
        try:
            future = self.ingest.submit(admitted)
        except QueueFull as exc:
            return Outcome("throttled", message=str(exc), retry_after_s=exc.retry_after_s)
        except Stopped as exc:
            return Outcome("unavailable", message=str(exc), retry_after_s=UNAVAILABLE_RETRY_S)
        return Pending(admitted, future)


def admits_inline(body: bytes, encoding: Encoding) -> bool:
    """Whether a front end admits ``body`` on its event loop's thread
    (:data:`INLINE_ADMISSION_BYTES`; OTLP/JSON, slower to decode, always goes to a worker)."""
    return encoding == "protobuf" and len(body) <= INLINE_ADMISSION_BYTES


@dataclass
class Pending:
    """An admitted export queued for the writer: once ``future`` is done (or the caller gave
    up waiting), :meth:`outcome` answers it and gives back its memory."""

    admitted: Admitted
    future: Future[int]
    release: Callable[[], None] = lambda: None

    def outcome(self) -> Outcome:
        """The answer: ok once committed, else why not (see the module docstring)."""
        try:
            if not self.future.done():
                raise StoreError(f"the trace store did not commit within {COMMIT_TIMEOUT_S:g} s")
            self.future.result()
        except QueueFull as exc:  # it waited past the queue deadline: refused unstored
            return Outcome("throttled", message=str(exc), retry_after_s=exc.retry_after_s)
        except Unstorable as exc:
            return Outcome("invalid", message=str(exc))
        except StoreError as exc:
            return Outcome("unavailable", message=str(exc), retry_after_s=UNAVAILABLE_RETRY_S)
        finally:
            self.release()
        return Outcome("ok", _response(self.admitted))


async def settle(started: Outcome | Pending) -> Outcome:
    """The outcome of :meth:`ExportService.start`, awaiting the commit on the event loop (no
    thread waits per request; the writer's results reach the loop as callbacks)."""
    if isinstance(started, Outcome):
        return started
    with contextlib.suppress(Exception):  # the outcome says what went wrong
        # shielded: a timeout must not cancel the writer's future
        async with asyncio.timeout(COMMIT_TIMEOUT_S):
            await asyncio.shield(asyncio.wrap_future(started.future))
    return started.outcome()
