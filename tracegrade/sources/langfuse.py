"""Langfuse: traces and their observations through the public API, as OTLP spans with GenAI
semantic-convention attributes.

Endpoints (Langfuse's public API, OpenAPI ``/api/public``; basic auth with the project's keys):

- ``GET /api/public/traces?page=…&limit=…&fromTimestamp=…&toTimestamp=…&orderBy=timestamp.asc``
  answers ``{"data": [trace…], "meta": {"page", "limit", "totalItems", "totalPages"}}``;
  ``--search`` adds Langfuse's own filters as ``name=…&userId=…&sessionId=…&tags=…``;
- ``GET /api/public/traces/{traceId}`` one trace with its observations (``observations``:
  ``id``, ``type``, ``name``, ``startTime``, ``endTime``, ``parentObservationId``, ``model``,
  ``input``, ``output``, ``usageDetails`` / ``usage``, ``level``, ``statusMessage``, …).

Each trace becomes a root span (the trace's name, input and output, ``session.id``,
``user.id``), each observation a child span (by ``parentObservationId``), mapped to GenAI
semantic conventions by its type:

- ``GENERATION``: ``gen_ai.operation.name`` ``chat``, ``gen_ai.request.model``,
  ``gen_ai.usage.input_tokens`` / ``output_tokens`` (``usageDetails.input``/``output``, else
  ``usage.input``/``output``), ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (OpenAI
  chat messages turned into the semconv's parts: text, ``tool_call``, ``tool_call_response``);
- ``TOOL``: ``execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` (the input),
  ``gen_ai.tool.call.result`` (the output);
- ``AGENT``: ``invoke_agent``, ``gen_ai.agent.name``;
- every observation also keeps Langfuse's own names (``langfuse.observation.type``,
  ``.input``, ``.output``, ``.model.name``, ``.usage_details``, ``.metadata``, ``.level``,
  ``.status_message``), as Langfuse's OpenTelemetry integration names them. ``level``
  ``ERROR`` is the span's error status.

Ids that are not hex (Langfuse's own SDKs before OpenTelemetry used UUIDs) become stable
hex ids derived from them, so a second pull of the same trace adds nothing.

Settings, as Langfuse's SDK reads them: ``LANGFUSE_HOST`` or ``LANGFUSE_BASE_URL`` (default
``https://cloud.langfuse.com``), ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY``
(required).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote

from tracegrade import environment
from tracegrade.errors import ConfigError
from tracegrade.otlp.build import RequestBuilder, stable_hex
from tracegrade.otlp.codec import ExportTraceServiceRequest
from tracegrade.sources.base import Found, PullQuery, Settings, base_url, env, iso, unix_nano
from tracegrade.sources.http import ApiClient
from tracegrade.spans import SpanKind

NAME = "langfuse"
DEFAULT_URL = "https://cloud.langfuse.com"
TRACES_PATH = "/api/public/traces"
SCOPE = "langfuse"
"""The instrumentation scope of the spans built from Langfuse's records."""
OPERATIONS = {"GENERATION": "chat", "TOOL": "execute_tool", "AGENT": "invoke_agent"}


def settings(url: str | None = None) -> Settings:
    """The host and keys from the environment (module docstring); ``url`` wins.

    Raises:
        ConfigError: a key is missing.
    """
    public = env([environment.LANGFUSE_PUBLIC_KEY])
    secret = env([environment.LANGFUSE_SECRET_KEY])
    if not public or not secret:
        raise ConfigError(
            "Langfuse needs the project's keys: set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"
        )
    token = base64.b64encode(f"{public}:{secret}".encode()).decode()
    host = base_url(url, [environment.LANGFUSE_HOST, environment.LANGFUSE_BASE_URL], DEFAULT_URL)
    return Settings(host, {"Authorization": f"Basic {token}"})


class LangfuseSource:
    """A Langfuse project's traces (see the module docstring)."""

    name = NAME

    def __init__(self, settings: Settings, client: ApiClient | None = None):
        self.settings = settings
        self.client = client or ApiClient("Langfuse", settings)

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def find(self, query: PullQuery) -> Iterator[list[Found]]:
        """Traces by timestamp, oldest first, a page at a time (``meta.totalPages``)."""
        if query.trace_ids:
            yield [Found(trace_hex_id(t), 0, t) for t in query.trace_ids]
            return
        params: dict[str, Any] = {"limit": query.page_size, "orderBy": "timestamp.asc"}
        params.update(parse_qsl(query.search or "", keep_blank_values=False))
        if query.since_unix_nano is not None:
            params["fromTimestamp"] = iso(query.since_unix_nano)
        if query.until_unix_nano is not None:
            params["toTimestamp"] = iso(query.until_unix_nano)
        page_number = 1
        while True:
            page = self.client.get(TRACES_PATH, {**params, "page": page_number}) or {}
            yield [
                Found(trace_hex_id(t["id"]), unix_nano(t.get("timestamp")), t["id"])
                for t in page.get("data") or []
            ]
            meta = page.get("meta") or {}
            if not page.get("data") or page_number >= int(meta.get("totalPages") or 0):
                return
            page_number += 1

    def fetch(self, found: Sequence[Found]) -> list[ExportTraceServiceRequest]:
        """Each trace with its observations, converted (module docstring)."""
        requests = []
        for trace in found:
            path = f"{TRACES_PATH}/{quote(trace.key, safe='')}"
            detail = self.client.get(path, missing_ok=True)
            if detail:
                requests.append(trace_request(detail))
        return requests


def trace_hex_id(langfuse_id: str) -> str:
    """The OTLP trace id of a Langfuse trace: its id when 32 hex digits, else one derived."""
    return _hex(langfuse_id, 16) or stable_hex("langfuse.trace", langfuse_id, nbytes=16)


def _hex(value: str, nbytes: int) -> str | None:
    text = value.lower().replace("-", "") if nbytes == 16 else value.lower()
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    return text if len(raw) == nbytes and any(raw) else None


def trace_request(trace: Mapping[str, Any]) -> ExportTraceServiceRequest:
    """One OTLP trace request from a Langfuse trace with its observations (module docstring)."""
    trace_id = trace_hex_id(str(trace["id"]))
    builder = RequestBuilder(trace_id, _resource(trace), scope_name=SCOPE)
    observations = sorted(
        trace.get("observations") or [], key=lambda o: (unix_nano(o.get("startTime")), o["id"])
    )
    ids = {str(o["id"]): _span_id(trace_id, str(o["id"])) for o in observations}
    start = unix_nano(trace.get("timestamp"))
    ends = [unix_nano(o.get("endTime") or o.get("startTime")) for o in observations]
    root_id = builder.span_id("langfuse.trace", trace["id"])
    builder.add(
        root_id,
        str(trace.get("name") or "langfuse trace"),
        start_unix_nano=start,
        end_unix_nano=max([start, *ends, start + int(float(trace.get("latency") or 0) * 1e9)]),
        attributes=_trace_attributes(trace),
        kind=SpanKind.SERVER,
    )
    for observation in observations:
        parent = ids.get(str(observation.get("parentObservationId") or ""), root_id)
        _add_observation(builder, ids[str(observation["id"])], parent, observation)
    return builder.request()


def _span_id(trace_id: str, observation_id: str) -> str:
    return _hex(observation_id, 8) or stable_hex(trace_id, observation_id, nbytes=8)


def _resource(trace: Mapping[str, Any]) -> dict[str, Any]:
    resource = {"service.name": "langfuse"}
    if trace.get("environment"):
        resource["deployment.environment.name"] = trace["environment"]
    if trace.get("release"):
        resource["service.version"] = trace["release"]
    return resource


def _trace_attributes(trace: Mapping[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "langfuse.trace.name": trace.get("name"),
        "langfuse.trace.input": trace.get("input"),
        "langfuse.trace.output": trace.get("output"),
        "langfuse.trace.tags": list(trace.get("tags") or []) or None,
        "langfuse.trace.metadata": trace.get("metadata") or None,
        "session.id": trace.get("sessionId"),
        "gen_ai.conversation.id": trace.get("sessionId"),
        "user.id": trace.get("userId"),
    }
    return {k: v for k, v in attributes.items() if v is not None}


def _add_observation(
    builder: RequestBuilder, span_id: str, parent: str, observation: Mapping[str, Any]
) -> None:
    start = unix_nano(observation.get("startTime"))
    end = unix_nano(observation.get("endTime")) or start
    error = None
    if observation.get("level") == "ERROR":
        error = str(observation.get("statusMessage") or "error")
    kind = observation.get("type") or "SPAN"
    builder.add(
        span_id,
        _span_name(kind, observation),
        start_unix_nano=start,
        end_unix_nano=max(end, start),
        attributes={**_langfuse_attributes(observation), **_genai_attributes(kind, observation)},
        parent_span_id=parent,
        kind=SpanKind.CLIENT if kind == "GENERATION" else SpanKind.INTERNAL,
        error=error,
    )


def _span_name(kind: str, observation: Mapping[str, Any]) -> str:
    name = str(observation.get("name") or kind.lower())
    if kind in OPERATIONS:
        target = observation.get("model") if kind == "GENERATION" else name
        return f"{OPERATIONS[kind]} {target}" if target else OPERATIONS[kind]
    return name


def _langfuse_attributes(observation: Mapping[str, Any]) -> dict[str, Any]:
    fields = {
        "langfuse.observation.type": observation.get("type"),
        "langfuse.observation.input": observation.get("input"),
        "langfuse.observation.output": observation.get("output"),
        "langfuse.observation.model.name": observation.get("model"),
        "langfuse.observation.model.parameters": observation.get("modelParameters") or None,
        "langfuse.observation.usage_details": observation.get("usageDetails") or None,
        "langfuse.observation.cost_details": observation.get("costDetails") or None,
        "langfuse.observation.metadata": observation.get("metadata") or None,
        "langfuse.observation.level": observation.get("level"),
        "langfuse.observation.status_message": observation.get("statusMessage"),
        "langfuse.observation.completion_start_time": observation.get("completionStartTime"),
    }
    return {k: v for k, v in fields.items() if v is not None}


def _genai_attributes(kind: str, observation: Mapping[str, Any]) -> dict[str, Any]:
    if kind not in OPERATIONS:
        return {}
    out: dict[str, Any] = {"gen_ai.operation.name": OPERATIONS[kind]}
    name = observation.get("name")
    if kind == "GENERATION":
        out.update(_generation(observation))
    elif kind == "TOOL":
        out["gen_ai.tool.name"] = name
        out["gen_ai.tool.call.arguments"] = observation.get("input")
        out["gen_ai.tool.call.result"] = observation.get("output")
        metadata = observation.get("metadata") or {}
        if isinstance(metadata, dict) and metadata.get("tool_call_id"):
            out["gen_ai.tool.call.id"] = metadata["tool_call_id"]
    else:
        out["gen_ai.agent.name"] = name
    return {k: v for k, v in out.items() if v is not None}


def _generation(observation: Mapping[str, Any]) -> dict[str, Any]:
    usage = observation.get("usageDetails") or {}
    legacy = observation.get("usage") or {}
    out: dict[str, Any] = {
        "gen_ai.request.model": observation.get("model"),
        "gen_ai.response.model": observation.get("model"),
        "gen_ai.usage.input_tokens": usage.get("input", legacy.get("input")),
        "gen_ai.usage.output_tokens": usage.get("output", legacy.get("output")),
    }
    messages = input_messages(observation.get("input"))
    if messages:
        out["gen_ai.input.messages"] = json.dumps(messages, ensure_ascii=False)
    answer = output_messages(observation.get("output"))
    if answer:
        out["gen_ai.output.messages"] = json.dumps(answer, ensure_ascii=False)
    return out


def input_messages(value: Any) -> list[dict[str, Any]]:
    """OpenAI chat messages (a list, or ``{"messages": [...]}``) as GenAI semconv input
    messages (``role`` and ``parts``); a plain string is one user message."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, str):
        return [{"role": "user", "parts": [{"type": "text", "content": value}]}]
    if not isinstance(value, list):
        return []
    return [m for m in (_message(item) for item in value) if m]


def output_messages(value: Any) -> list[dict[str, Any]]:
    """The generation's answer (a message, a list of choices or messages, or text) as GenAI
    semconv output messages (with ``finish_reason`` when the answer gives one)."""
    if isinstance(value, dict) and isinstance(value.get("choices"), list):
        value = [c.get("message", c) for c in value["choices"] if isinstance(c, dict)]
    if isinstance(value, str):
        value = {"role": "assistant", "content": value}
    items = value if isinstance(value, list) else [value]
    return [m for m in (_message(item, "assistant") for item in items) if m]


def _message(item: Any, default_role: str = "user") -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    parts: list[dict[str, Any]] = []
    role = str(item.get("role") or default_role)
    content = item.get("content")
    if role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": item.get("tool_call_id"), "response": content}
        )
    elif isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        parts += [
            {"type": "text", "content": c.get("text")}
            for c in content
            if isinstance(c, dict) and c.get("type") == "text"
        ]
    for call in item.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": _arguments(function.get("arguments")),
            }
        )
    message: dict[str, Any] = {"role": role, "parts": parts}
    if item.get("finish_reason"):
        message["finish_reason"] = item["finish_reason"]
    return message if parts else None


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
