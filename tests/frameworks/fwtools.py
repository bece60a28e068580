"""What every Python framework driver shares (stdlib only; imported from inside a driver's venv).

A driver runs ``scenarios()`` in order with its framework; for each turn it opens
``with turn(scenario, index) as record:`` around the framework call (the recorder maps traces
to turns by these times) and sets ``record.answer`` to what the framework returned. The
framework's tools call :func:`call_tool`, which performs the tool from ``scenarios.json``,
logs the execution and raises :class:`ToolFailure` for the scripted errors.

Environment (set by ``record.py``): ``FW_SCENARIOS`` (scenarios.json), ``FW_LOG`` (the
driver's JSON-lines log), ``FW_MODEL`` (the model name to ask for), ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` (the scripted model), ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the capture server,
OTLP/HTTP protobuf), ``OTEL_SERVICE_NAME``, ``FW_MODE`` (the setup's mode, if any).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_LOCK = threading.Lock()


class ToolFailure(RuntimeError):
    """A scripted tool error (e.g. ``order Z999 not found``)."""


def load_scenarios() -> dict[str, Any]:
    return json.loads(Path(os.environ.get("FW_SCENARIOS", HERE / "scenarios.json")).read_text())


SPEC = load_scenarios()
MODEL = os.environ.get("FW_MODEL", "gpt-4o-mini")
BASE_URL = os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
API_KEY = os.environ.get("OPENAI_API_KEY", "sk-test")
SYSTEM_PROMPT = SPEC["system_prompt"]
MODE = os.environ.get("FW_MODE", "")


def log(event: str, **fields: Any) -> None:
    """Append one event to the driver log (``FW_LOG``)."""
    path = os.environ.get("FW_LOG")
    if not path:
        return
    entry = {"event": event, "t_ns": time.time_ns(), **fields}
    with _LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, default=str) + "\n")


def tool_spec(name: str) -> dict[str, Any]:
    """The tool's description and parameters (``{param: {type, description}}``)."""
    return SPEC["tools"][name]


def call_tool(name: str, arguments: dict[str, Any]) -> str:
    """Perform tool ``name`` and return its result as a JSON string; log the execution.

    Raises :class:`ToolFailure` with the scripted message for a scripted error, and
    ``KeyError`` for an input the scenarios do not know (logged as an error too).
    """
    spec = SPEC["tools"][name]
    key = next(iter(arguments.values()), None) if arguments else None
    if key in spec["errors"]:
        message = spec["errors"][key]
        log("tool", name=name, arguments=arguments, error=message)
        raise ToolFailure(message)
    if key not in spec["results"]:
        message = f"unknown {name} input {key!r}"
        log("tool", name=name, arguments=arguments, error=message)
        raise KeyError(message)
    result = json.dumps(spec["results"][key])
    log("tool", name=name, arguments=arguments, result=result)
    return result


def documents() -> list[dict[str, Any]]:
    """The RAG scenarios' documents (``{id, content, metadata}``; none in scenarios.json)."""
    return list(SPEC.get("documents", []))


def top_k() -> int:
    """How many documents a RAG driver retrieves per question."""
    return int(SPEC.get("top_k", 2))


EMBEDDING_DIMENSIONS = 64


def keyword_vector(text: str) -> list[float]:
    """A deterministic bag-of-words embedding (no model): each lowercase word hashed into one
    of :data:`EMBEDDING_DIMENSIONS` buckets, the vector L2-normalised; cosine similarity then
    counts shared words."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if len(word) > 2:
            bucket = int(hashlib.sha256(word.encode()).hexdigest(), 16) % EMBEDDING_DIMENSIONS
            vector[bucket] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def log_retrieval(query: str, found: list[dict[str, Any]]) -> None:
    """Log what a retriever returned: ``found`` is ``[{"id", "score"?}]`` in its order."""
    log("retrieval", query=query, documents=found)


@dataclass
class Scenario:
    id: str
    turns: list[dict[str, Any]]
    stream: bool = False
    about: str = ""

    @property
    def conversation_id(self) -> str:
        """A stable conversation/thread/session id for this scenario's turns."""
        return f"conv-{self.id}"


def scenarios(only: list[str] | None = None) -> list[Scenario]:
    """The scenarios in order (``only``: these ids; env ``FW_ONLY`` = comma-separated ids)."""
    wanted = only or [s for s in os.environ.get("FW_ONLY", "").split(",") if s]
    found = [
        Scenario(s["id"], s["turns"], bool(s.get("stream")), s.get("about", ""))
        for s in SPEC["scenarios"]
    ]
    return [s for s in found if not wanted or s.id in wanted]


@dataclass
class TurnRecord:
    scenario: str
    turn: int
    user: str
    answer: Any = None
    notes: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def turn(scenario: Scenario, index: int) -> Iterator[TurnRecord]:
    """Log the start and end of one user turn around the framework call; an exception in the
    framework is logged (the turn ends with ``error``) and not re-raised, so the next scenario
    still runs."""
    record = TurnRecord(scenario.id, index, scenario.turns[index]["user"])
    log("turn_start", scenario=scenario.id, turn=index, user=record.user, stream=scenario.stream)
    error = None
    try:
        yield record
    except Exception as exc:  # noqa: BLE001 - a framework failure is data, not a crash
        error = f"{type(exc).__name__}: {exc}"
    time.sleep(0.05)  # spans end before the turn does
    log(
        "turn_end",
        scenario=scenario.id,
        turn=index,
        answer=None if record.answer is None else str(record.answer),
        error=error,
        notes=record.notes,
    )


def setup_otel(logs: bool = False, events_logger: bool = False) -> tuple[Any, Any]:
    """A TracerProvider (and, with ``logs``, a LoggerProvider) exporting OTLP/HTTP protobuf to
    ``OTEL_EXPORTER_OTLP_ENDPOINT``, set as the global providers. Needs
    ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http`` in the venv."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = None
    if logs:
        from opentelemetry._logs import set_logger_provider
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        set_logger_provider(logger_provider)
    return tracer_provider, logger_provider


def shutdown(*providers: Any) -> None:
    """Flush and shut down providers (None entries are skipped)."""
    for provider in providers:
        if provider is None:
            continue
        with contextlib.suppress(Exception):
            provider.force_flush()
        with contextlib.suppress(Exception):
            provider.shutdown()
