"""The normalised view of what an agent did: :class:`AgentTrace` and its parts.

Built once from spans and log records by :mod:`tracegrade.normalize`; every scorer
reads only this. Times are unix nanoseconds (``*_unix_nano``) or milliseconds (``*_ms``);
token counts are tokens. ``gaps`` says what could not be derived and why, so a scorer can
tell "the agent did not do X" from "the trace does not record X".

The JSON form (:meth:`AgentTrace.to_dict`, ``tracegrade inspect --json``) is versioned by
:data:`SCHEMA_VERSION`; :func:`json_schema` gives its JSON Schema.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

SCHEMA_VERSION = "tracegrade.agent_trace/1"
"""Version of the AgentTrace JSON shape; bumped on any incompatible change."""


@dataclass(frozen=True, slots=True)
class LlmCall:
    """One call to a model (one LLM span)."""

    span_id: str
    model: str | None
    """Response model, else request model (``gen_ai.response.model`` / ``gen_ai.request.model``)."""
    provider: str | None
    input_tokens: int | None
    """Prompt tokens, including cached ones (``gen_ai.usage.input_tokens``); None if unrecorded."""
    output_tokens: int | None
    cached_input_tokens: int | None
    start_unix_nano: int
    duration_ms: float
    finish_reason: str | None
    """First finish reason; ``tool_calls`` and ``tool_call`` are both reported as ``tool_calls``."""
    output_text: str | None
    tool_call_ids: tuple[str | None, ...] = ()
    """Ids of the tool calls this response requested, in order (None where the model gave none)."""
    agent: str | None = None
    agent_span_id: str | None = None
    """Span id of the nearest enclosing agent (subtree budgets walk up from it)."""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call, in execution order. It was *attempted* by definition; it was *performed*
    only when neither the span status nor the result reports an error."""

    name: str
    call_id: str | None
    arguments: Any
    """Parsed JSON arguments (``gen_ai.tool.call.arguments``); None when not recorded."""
    result: str | None
    """The result as text (``gen_ai.tool.call.result``); None when not recorded or unusable."""
    error: str | None = None
    """Why the call failed (span status/``error.type``, or an error reported in the result)."""
    arguments_recorded: bool = True
    span_id: str | None = None
    start_unix_nano: int | None = None
    duration_ms: float | None = None
    llm_call_index: int | None = None
    """Index in ``AgentTrace.llm_calls`` of the response that requested the call; calls sharing
    it were requested in parallel."""
    agent: str | None = None
    agent_span_id: str | None = None
    source: Literal["span", "message", "span+message"] = "span"
    """Where the call was seen: a tool span, an LLM message, or both (joined, counted once)."""
    result_unavailable: str | None = None
    """Why something was recorded as the result but is not one (e.g. a Python object repr
    in place of the content); ``result`` is None then."""
    arguments_mismatch: str | None = None
    """Set when the tool span's record of the arguments disagrees with the model's request
    (``arguments`` is then the request); says what each recorded."""

    @property
    def performed(self) -> bool:
        """True when the call ran without an error."""
        return self.error is None


@dataclass(frozen=True, slots=True)
class RetrievedDocument:
    """One document a retrieval returned (OpenInference ``retrieval.documents.N.document.*``,
    GenAI ``gen_ai.retrieval.documents[N]``, a LangChain ``Document``, a LlamaIndex node)."""

    id: str | None
    """The document's id (``document.id``; else its metadata's ``id`` / ``doc_id`` /
    ``document_id`` / ``source``); None when unrecorded."""
    content: str | None
    """The document's text; None when not recorded (content capture off, or a convention that
    records ids and scores only)."""
    score: float | None = None
    """The relevance score as the retriever reported it (scale and direction are the
    retriever's own: a cosine similarity, a distance, a rerank score); None when unrecorded."""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Retrieval:
    """One retrieval (a retriever span): the query and the documents it returned, in the
    retriever's order. Its documents' content is evidence for the answer, like a tool result
    (:func:`tracegrade.scoring.grounding.evidence_texts`)."""

    span_id: str
    query: str | None
    """The query text (``input.value``, ``gen_ai.retrieval.query.text``); None if unrecorded."""
    documents: tuple[RetrievedDocument, ...]
    name: str | None = None
    """The retriever or data source (``gen_ai.data_source.id``, else the span's name)."""
    start_unix_nano: int = 0
    duration_ms: float = 0.0
    agent: str | None = None
    """The nearest enclosing agent that asked for it."""
    agent_span_id: str | None = None
    error: str | None = None
    documents_recorded: bool = True
    """False when the span records no documents at all (content capture off): an empty
    ``documents`` then says nothing about what was retrieved."""


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """One agent invocation span (``invoke_agent``, OpenInference AGENT, Traceloop agent...)."""

    name: str | None
    span_id: str
    parent_agent_span_id: str | None = None
    duration_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class Gap:
    """A scoring input the trace does not provide: ``field`` names it, ``reason`` says why and,
    where known, which setting would record it."""

    field: str
    reason: str


@dataclass(frozen=True, slots=True)
class TurnStart:
    """Where one user turn starts: the first LLM call given a new user message, and the user
    messages that call was given before it (its history). A conversation whose agent kept its
    context replays the earlier turns there; one that lost it (a restart that forgot the
    thread) does not."""

    user_input: str
    """The turn's user message (the last user message of the call's input)."""
    llm_call_index: int
    """Index in ``AgentTrace.llm_calls`` of the turn's first LLM call."""
    history: tuple[str, ...] = ()
    """The user messages before ``user_input`` in that call's input, in order."""


@dataclass(frozen=True, slots=True)
class AgentTrace:
    """The normalised trace of one agent run (one OTLP trace)."""

    trace_id: str
    user_inputs: tuple[str, ...]
    """The user messages new in this trace, in order: from the last user message of its first
    LLM call on, plus any added by later calls. A conversation recorded as one trace keeps all
    its turns here; a conversation whose turns are separate traces (most frameworks) has one
    turn's input here and the earlier turns in :attr:`history`."""
    final_output: str | None
    """The agent's final answer; None when the run ended without one (e.g. on a tool call)."""
    llm_calls: tuple[LlmCall, ...]
    tool_calls: tuple[ToolCall, ...]
    agents: tuple[AgentInfo, ...] = ()
    conversation_id: str | None = None
    history: tuple[str, ...] = ()
    """The user messages of earlier turns that this trace's first LLM call replays (its
    history), in order; empty for a conversation's first turn."""
    system_instructions: str | None = None
    """The system prompt (``gen_ai.system_instructions`` or the system message), if recorded."""
    start_unix_nano: int = 0
    duration_ms: float = 0.0
    """The agent's latency (ms): its root span; in a ``tracegrade run`` trace, its own spans
    under the runner's case span (so a run and a production trace of the same agent measure
    the same thing); the extent of every span when the trace has several roots."""
    input_tokens: int | None = None
    """Total input tokens over LLM calls (or the agent's aggregated usage when no LLM span has
    usage); never both."""
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    conventions: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()
    root_span_name: str = ""
    root_attributes: Mapping[str, Any] = field(default_factory=dict)
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    span_count: int = 0
    log_record_count: int = 0
    retrievals: tuple[Retrieval, ...] = ()
    """Retrievals (RAG), in start order: each query and the documents it returned."""
    turn_starts: tuple[TurnStart, ...] = ()
    """Where each user turn starts, in LLM-call order (from the top agent's LLM calls that
    record their input messages); empty when no call records them."""

    def gap(self, name: str) -> Gap | None:
        """The gap recorded for field ``name``, if any."""
        return next((g for g in self.gaps if g.field == name), None)

    @property
    def evaluated_span_id(self) -> str | None:
        """The span an evaluation of this trace is about (hex): its first outermost agent span,
        else its first LLM call's span; None with neither. GenAI semconv parents a
        ``gen_ai.evaluation.result`` event to "the GenAI operation span being evaluated". In a
        conversation merged from several traces both come from the first trace, whose id the
        merged trace keeps."""
        outermost = (a.span_id for a in self.agents if a.parent_agent_span_id is None)
        first = next(outermost, None) or (self.agents[0].span_id if self.agents else None)
        return first or (self.llm_calls[0].span_id if self.llm_calls else None)

    @property
    def tools_called(self) -> tuple[str, ...]:
        """Names of the tool calls, in execution order."""
        return tuple(call.name for call in self.tool_calls)

    def to_dict(self) -> dict[str, Any]:
        """The versioned JSON form (see :data:`SCHEMA_VERSION` and :func:`json_schema`)."""
        data = {"schema_version": SCHEMA_VERSION, **_jsonable(dataclasses.asdict(self))}
        data["tool_calls"] = [
            {**d, "performed": call.performed}
            for d, call in zip(data["tool_calls"], self.tool_calls, strict=True)
        ]
        return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :meth:`AgentTrace.to_dict` output (generated by pydantic)."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(AgentTrace).json_schema(mode="serialization")
    schema["properties"] = {"schema_version": {"const": SCHEMA_VERSION}, **schema["properties"]}
    schema["required"] = ["schema_version", *schema.get("required", [])]
    schema["title"] = "AgentTrace"
    schema["$id"] = SCHEMA_VERSION
    return schema
