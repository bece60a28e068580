"""``POST /v1/feedback`` on the receiver's OTLP/HTTP port: end-user feedback about a trace, for
an application that has the trace id but no OpenTelemetry logs pipeline (a thumbs button in a
web page calling its back end).

The body is JSON: ``{"trace_id": "<32 hex>", "name": "user.feedback", "score": 0,
"label": "thumbs_down", "comment": "wrong order number", "span_id": "<16 hex>"}``
(``name`` defaults to ``user.feedback``; at least one of score, label or comment; no other
field). With a receiver token, the request needs ``Authorization: Bearer TOKEN`` like every
export. The feedback becomes one ``gen_ai.evaluation.result`` log record
(:func:`tracegrade.store.feedback.feedback_request`) and goes through the same admission,
redaction, queue and group commit as an OTLP logs export, so it is stored, joined to its trace
whether the trace came first or not, before the answer: ``200 {"stored": true}``; 400 for a
bad body (the message names the field), 401, 413, 415, 429 / 503 with ``Retry-After`` as for
exports, and 429 beyond a client's rate or a trace's feedback records
(:mod:`.feedback_limits`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from tracegrade.collector.feedback_limits import FeedbackLimits
from tracegrade.collector.service import ExportService, settle
from tracegrade.store.feedback import DEFAULT_ATTRIBUTE, feedback_request

MAX_BODY_BYTES = 64 * 1024
"""Longest feedback body accepted (413 beyond)."""
ANSWER_WITHIN_S = 8.0
"""As for OTLP/HTTP exports: a request that cannot be committed by then is refused."""


class FeedbackBody(BaseModel):
    """The JSON body of ``POST /v1/feedback`` (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(pattern=r"^[0-9a-fA-F]{32}$")
    name: str = Field(default=DEFAULT_ATTRIBUTE, min_length=1, max_length=256)
    score: float | None = Field(default=None, allow_inf_nan=False)
    label: str | None = Field(default=None, max_length=256)
    comment: str | None = Field(default=None, max_length=16384)
    span_id: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{16}$")

    @model_validator(mode="after")
    def _says_something(self) -> FeedbackBody:
        if self.score is None and not self.label and not self.comment:
            raise ValueError("give at least one of score, label or comment")
        return self


def _error(status: int, message: str, retry_after_s: float | None = None) -> Response:
    wait = None if retry_after_s is None else str(max(1, math.ceil(retry_after_s)))
    headers = {} if wait is None else {"Retry-After": wait}
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    return f"{where}: {first.get('msg', 'invalid')}"


_STATUS = {"invalid": 400, "unauthorized": 401, "too_large": 413, "throttled": 429}


def feedback_endpoint(
    service: ExportService, limits: FeedbackLimits | None = None
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette handler of ``POST /v1/feedback`` over ``service``, within ``limits``
    (:mod:`.feedback_limits`; None: the defaults)."""
    bounds = limits or FeedbackLimits()

    async def feedback(request: Request) -> Response:
        if not service.authorized(request.headers.get("authorization")):
            response = _error(401, "missing or wrong bearer token")
            response.headers["WWW-Authenticate"] = 'Bearer realm="tracegrade"'
            return response
        refused = bounds.admit_client(request.client.host if request.client else "unknown")
        if refused is not None:
            return _error(429, refused.message, refused.retry_after_s)
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            return _error(415, f"unsupported Content-Type {media_type!r}: use application/json")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return _error(413, f"a feedback body is at most {MAX_BODY_BYTES} bytes")
        try:
            body = await _read(request)
            parsed = FeedbackBody.model_validate_json(body)
        except ValidationError as exc:
            return _error(400, _problem(exc))
        except ValueError as exc:  # the body is over MAX_BODY_BYTES
            return _error(413, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)
        refused = bounds.admit_trace(parsed.trace_id.lower())
        if refused is not None:
            return _error(429, refused.message)
        response = await _store(service, request, parsed)
        if response.status_code != 200:
            bounds.release(parsed.trace_id.lower())
        return response

    return feedback


async def _read(request: Request) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ValueError(f"a feedback body is at most {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _store(service: ExportService, request: Request, body: FeedbackBody) -> Response:
    logs = feedback_request(
        body.trace_id.lower(),
        body.name,
        score=body.score,
        label=body.label,
        comment=body.comment,
        span_id=body.span_id.lower() if body.span_id else None,
    )
    started: Any = service.start(
        "logs",
        logs.SerializeToString(),
        "protobuf",
        request.headers.get("authorization"),
        time.monotonic() + ANSWER_WITHIN_S,
        inline=True,
    )
    outcome = await settle(started)
    if outcome.kind != "ok":
        status = _STATUS.get(outcome.kind, 503)
        return _error(status, outcome.message, outcome.retry_after_s)
    return JSONResponse({"stored": True, "trace_id": body.trace_id.lower()})
