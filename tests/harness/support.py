"""Helpers shared by the harness fixture and tests (main dev venv side).

Import as ``from tests.harness.support import ...``. Needs opentelemetry-proto
only for the OTLP readers (``load_spans`` / ``load_log_records``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness import cassette as cassette_mod
from tests.harness import make_venvs
from tests.harness.scenario import FRAMEWORKS, INSTRUMENTATIONS, MODES, PLAIN

HERE = Path(__file__).resolve().parent

REPO = HERE.parent.parent
CASSETTE_DIR = REPO / "tests" / "data" / "cassettes"
SCENARIO = HERE / "scenario.py"

# The cassettes the harness is exercised on (relative to CASSETTE_DIR).
HARNESS_CASSETTES = (
    "opentelemetry-python-contrib/test_chat_completion_tool_calls_with_content.yaml",
    "opentelemetry-python-contrib/test_chat_completion_multiple_tools_streaming_with_content.yaml",
    "openllmetry/openai/test_chat_tool_calls.yaml",
    "openllmetry/openai/test_open_ai_function_calls_tools_parallel.yaml",
)

__all__ = [
    "CASSETTE_DIR",
    "HARNESS_CASSETTES",
    "INSTRUMENTATIONS",
    "PLAIN",
    "FRAMEWORKS",
    "MODES",
    "UnsupportedCombination",
    "cassette_path",
    "combination_supported",
    "venv_root",
    "expected_from_cassette",
    "Span",
    "load_spans",
    "load_log_records",
    "span_role",
]

expected_from_cassette = cassette_mod.expected_from_cassette


class UnsupportedCombination(Exception):
    """scenario.py exited 3: this instrumentation cannot replay this cassette."""


def venv_root() -> Path:
    return Path(os.environ.get("TRACEGRADE_HARNESS_VENVS") or make_venvs.DEFAULT_ROOT)


def cassette_path(cassette: str | Path) -> Path:
    p = Path(cassette)
    return p if p.is_absolute() else CASSETTE_DIR / p


def combination_supported(instrumentation: str, cassette: str | Path) -> tuple[bool, str]:
    """Whether scenario.py can replay this cassette with this instrumentation."""
    path = cassette_path(cassette)
    try:
        cassette_mod.require_chat_completions(cassette_mod.load_interactions(path), path)
    except ValueError as exc:
        return False, str(exc)
    if instrumentation in FRAMEWORKS:
        return cassette_mod.is_single_agent_loop(path)
    return True, "ok"


# ------------------------------------------------------------------ OTLP read


def _value(v) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def _attrs(kvs) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


@dataclass
class Span:
    name: str
    kind: int
    scope: str
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    start: int
    end: int
    status_code: int
    attributes: dict[str, Any]
    resource: dict[str, Any]


def load_spans(out_dir: str | Path) -> list[Span]:
    """Spans of ``traces.binpb`` (an ExportTraceServiceRequest), sorted by start time."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    req.ParseFromString((Path(out_dir) / "traces.binpb").read_bytes())
    spans = []
    for rs in req.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                spans.append(
                    Span(
                        s.name,
                        s.kind,
                        ss.scope.name,
                        s.trace_id,
                        s.span_id,
                        s.parent_span_id,
                        s.start_time_unix_nano,
                        s.end_time_unix_nano,
                        s.status.code,
                        _attrs(s.attributes),
                        resource,
                    )
                )
    return sorted(spans, key=lambda s: s.start)


def load_log_records(out_dir: str | Path) -> list[dict[str, Any]]:
    """Log records of ``logs.binpb`` (ExportLogsServiceRequest); [] when there is none."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    path = Path(out_dir) / "logs.binpb"
    if not path.exists():
        return []
    req = ExportLogsServiceRequest()
    req.ParseFromString(path.read_bytes())
    out = []
    for rl in req.resource_logs:
        for sl in rl.scope_logs:
            for rec in sl.log_records:
                out.append(
                    {
                        "event_name": rec.event_name or _attrs(rec.attributes).get("event.name"),
                        "scope": sl.scope.name,
                        "trace_id": rec.trace_id,
                        "span_id": rec.span_id,
                        "attributes": _attrs(rec.attributes),
                        "body": _value(rec.body),
                    }
                )
    return out


def span_role(span: Span) -> str | None:
    """'agent' | 'llm' | 'tool' | 'workflow' | None, by each convention's own marker."""
    a = span.attributes
    op = a.get("gen_ai.operation.name")
    oi = a.get("openinference.span.kind")
    tl = a.get("traceloop.span.kind")
    if tl in ("agent", "tool", "workflow"):
        return tl
    if op == "invoke_agent" or oi == "AGENT":
        return "agent"
    if op == "execute_tool" or oi == "TOOL":
        return "tool"
    if op in ("chat", "text_completion", "generate_content") or oi == "LLM":
        return "llm"
    return None


def tool_call_id(span: Span) -> str | None:
    """The call id a tool span carries, if its convention records one."""
    a = span.attributes
    return a.get("gen_ai.tool.call.id") or a.get("tool.id")


def tool_name(span: Span) -> str | None:
    a = span.attributes
    return a.get("gen_ai.tool.name") or a.get("tool.name") or a.get("traceloop.entity.name")
