"""Drive a real instrumentation over a recorded OpenAI cassette and dump OTLP.

Run *inside* a harness virtualenv (see ``make_venvs.py``)::

    .venvs/harness-openai-v2-latest/bin/python tests/harness/scenario.py \\
        --instrumentation openai-v2-latest \\
        --cassette tests/data/cassettes/opentelemetry-python-contrib/\\
test_chat_completion_tool_calls_with_content.yaml \\
        --out /tmp/out

Writes to ``--out``:

* ``traces.binpb``: ``ExportTraceServiceRequest`` bytes from the OTLP exporter's
  own encoder (``opentelemetry.exporter.otlp.proto.common.trace_encoder.encode_spans``);
* ``logs.binpb``: ``ExportLogsServiceRequest`` bytes (``_log_encoder.encode_logs``),
  only when the instrumentation emitted log records;
* ``requests.json``: the requests the replay server received, in order;
* ``summary.json``: instrumentation, mode, package versions, span names,
  served/recorded interaction counts, and the error if the run failed.

Instrumentations:

* plain-client ones (``openai-v2-default``, ``openai-v2-latest``,
  ``openinference``, ``traceloop``) re-issue each recorded request body through
  the official ``openai`` client inside one agent span, and between requests
  run a tool span for every tool call of the response that the next recorded
  request answers (result = that request's ``tool`` message), using the
  convention's own agent/tool shapes (util-genai ``invoke_agent`` /
  ``execute_tool``, OpenInference AGENT / TOOL spans, traceloop
  ``@workflow`` / ``@agent`` / ``@tool``);
* agent frameworks (``pydantic-ai``, ``agent-framework``) run a real agent with
  real tool functions that return the recorded tool results; only cassettes
  holding exactly one complete agent loop are supported (exit code 3 otherwise).

Exit codes: 0 ok, 1 the run failed (whatever was recorded is still written),
2 bad arguments, 3 unsupported instrumentation x cassette combination.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__:  # imported as tests.harness.scenario (for its constants)
    from . import cassette
    from .replay_server import ReplayServer
else:  # run as a script inside a harness venv
    sys.path.insert(0, str(HERE))
    import cassette  # noqa: E402
    from replay_server import ReplayServer  # noqa: E402

PLAIN = ("openai-v2-default", "openai-v2-latest", "openinference", "traceloop")
FRAMEWORKS = ("pydantic-ai", "agent-framework")
INSTRUMENTATIONS = PLAIN + FRAMEWORKS

MODES: dict[str, tuple[str, ...]] = {
    "openai-v2-default": ("default",),
    "openai-v2-latest": ("span_only", "span_and_event", "event_only"),
    "openinference": ("default",),
    "traceloop": ("attributes", "events"),
    "pydantic-ai": ("5", "2", "3", "4", "6"),
    "agent-framework": ("default",),
}

SERVICE_NAME = "tracegrade-harness"
SCOPE = "tracegrade.harness"
API_KEY = "test-key-not-used"

# Distribution names whose versions go into summary.json.
_VERSION_OF = (
    "openai",
    "httpx",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-common",
    "opentelemetry-instrumentation-openai-v2",
    "opentelemetry-util-genai",
    "openinference-instrumentation-openai",
    "openinference-instrumentation",
    "traceloop-sdk",
    "opentelemetry-instrumentation-openai",
    "opentelemetry-semantic-conventions-ai",
    "pydantic-ai-slim",
    "agent-framework-core",
    "agent-framework-openai",
)


class Unsupported(Exception):
    pass


# ---------------------------------------------------------------- environment


def configure_env(instrumentation: str, mode: str) -> None:
    """Environment the instrumentation reads (set before importing it)."""
    os.environ["OPENAI_API_KEY"] = API_KEY
    os.environ["OTEL_SERVICE_NAME"] = SERVICE_NAME
    for var in (
        "OTEL_TRACES_EXPORTER",
        "OTEL_LOGS_EXPORTER",
        "OTEL_METRICS_EXPORTER",
        "OTEL_SDK_DISABLED",
    ):
        os.environ.pop(var, None)
    os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
    os.environ.pop("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", None)
    if instrumentation == "openai-v2-default":
        # v1.30 conventions: content goes to log events gen_ai.*.message / gen_ai.choice
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    elif instrumentation == "openai-v2-latest":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = mode
    elif instrumentation == "openinference":
        for var in (
            "OPENINFERENCE_HIDE_INPUTS",
            "OPENINFERENCE_HIDE_OUTPUTS",
            "OPENINFERENCE_HIDE_INPUT_MESSAGES",
            "OPENINFERENCE_HIDE_OUTPUT_MESSAGES",
        ):
            os.environ[var] = "false"
    elif instrumentation == "traceloop":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
        os.environ["TRACELOOP_TELEMETRY"] = "false"
        os.environ["TRACELOOP_METRICS_ENABLED"] = "false"
        os.environ["TRACELOOP_LOGGING_ENABLED"] = "false"
        os.environ["TRACELOOP_SUPPRESS_WARNINGS"] = "true"
    elif instrumentation == "agent-framework":
        os.environ["ENABLE_INSTRUMENTATION"] = "true"
        os.environ["ENABLE_SENSITIVE_DATA"] = "true"


# ------------------------------------------------------------------ providers


class Telemetry:
    """SDK TracerProvider + LoggerProvider with in-memory exporters."""

    def __init__(self, install_tracer_provider: bool = True):
        from opentelemetry import trace
        from opentelemetry._logs import set_logger_provider
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        try:
            from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as _MemLogs
        except ImportError:  # older SDKs
            from opentelemetry.sdk._logs.export import InMemoryLogExporter as _MemLogs

        self.resource = Resource.create({"service.name": SERVICE_NAME})
        self.span_exporter = InMemorySpanExporter()
        self.log_exporter = _MemLogs()
        self.tracer_provider = None
        if install_tracer_provider:
            self.tracer_provider = TracerProvider(resource=self.resource)
            self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.span_exporter))
            if os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
                # Also export over OTLP/HTTP with the SDK's own exporter (its standard
                # variables: endpoint, headers), e.g. to a trace backend (tests/sources).
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )

                self.tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
            trace.set_tracer_provider(self.tracer_provider)
        self.logger_provider = LoggerProvider(resource=self.resource)
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))
        set_logger_provider(self.logger_provider)

    def flush(self) -> None:
        from opentelemetry import trace

        provider = self.tracer_provider or trace.get_tracer_provider()
        if hasattr(provider, "force_flush"):
            provider.force_flush()
        self.logger_provider.force_flush()

    def write(self, out: Path) -> dict:
        from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        spans = list(self.span_exporter.get_finished_spans())
        (out / "traces.binpb").write_bytes(encode_spans(spans).SerializeToString())
        logs = list(self.log_exporter.get_finished_logs())
        logs_file = out / "logs.binpb"
        if logs:
            logs_file.write_bytes(encode_logs(logs).SerializeToString())
        elif logs_file.exists():
            logs_file.unlink()
        return {
            "span_count": len(spans),
            "span_names": [s.name for s in sorted(spans, key=lambda s: s.start_time or 0)],
            "log_count": len(logs),
        }


# ------------------------------------------------------------- plain replay


def _call_client(client, body: dict) -> dict:
    """Issue a recorded request body through the official client; return a completion dict."""
    from openai.resources.chat.completions import Completions

    known = set(inspect.signature(Completions.create).parameters) - {"self"}
    kwargs = {k: v for k, v in body.items() if k in known}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        kwargs["extra_body"] = extra
    result = client.chat.completions.create(**kwargs)
    if body.get("stream"):
        chunks = [chunk.model_dump() for chunk in result]  # consume the stream fully
        return cassette.reassemble_stream(chunks)
    return result.model_dump()


def _text(completion: dict) -> str | None:
    choices = completion.get("choices") or [{}]
    return (choices[0].get("message") or {}).get("content")


class ConversationInfo:
    def __init__(self, inters: list[cassette.Interaction], agent_name: str):
        self.inters = inters
        self.agent_name = agent_name
        first = inters[0].request_body or {}
        self.model = first.get("model")
        self.user_inputs: list[str] = []
        self.system: list[str] = []
        self.tools: dict[str, dict] = {}
        for inter in inters:
            body = inter.request_body if isinstance(inter.request_body, dict) else {}
            self.tools.update(cassette.tool_definitions(body))
            for msg in body.get("messages") or []:
                content = msg.get("content") if isinstance(msg, dict) else None
                if not isinstance(content, str):
                    continue
                if msg.get("role") == "user" and content not in self.user_inputs:
                    self.user_inputs.append(content)
                if msg.get("role") in ("system", "developer") and content not in self.system:
                    self.system.append(content)


def replay_loop(
    client, info: ConversationInfo, run_tool: Callable[[dict, str, dict | None], Any]
) -> list[dict]:
    """Re-issue every recorded request; run answered tool calls between them."""
    completions: list[dict] = []
    inters = info.inters
    for pos, inter in enumerate(inters):
        completion = _call_client(client, inter.request_body)
        completions.append(completion)
        if pos + 1 < len(inters):
            answers = cassette.tool_results_in(inters[pos + 1].request_body)
            for tc in cassette.response_tool_calls(completion):
                if tc.get("id") in answers:
                    name = (tc.get("function") or {}).get("name")
                    run_tool(tc, answers[tc["id"]], info.tools.get(name))
    return completions


def _usage_sum(completions: list[dict]) -> tuple[int, int]:
    inp = sum(((c.get("usage") or {}).get("prompt_tokens") or 0) for c in completions)
    out = sum(((c.get("usage") or {}).get("completion_tokens") or 0) for c in completions)
    return inp, out


def _finish_reasons(completions: list[dict]) -> list[str]:
    if not completions:
        return []
    return [
        c.get("finish_reason")
        for c in completions[-1].get("choices") or []
        if c.get("finish_reason")
    ]


def _args(tc: dict) -> tuple[str, Any]:
    raw = (tc.get("function") or {}).get("arguments") or ""
    try:
        return raw, json.loads(raw) if raw else {}
    except ValueError:
        return raw, raw


def run_openai_v2(
    info: ConversationInfo, server: ReplayServer, tel: Telemetry, latest: bool
) -> None:
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import TelemetryHandler

    OpenAIInstrumentor().instrument(
        tracer_provider=tel.tracer_provider, logger_provider=tel.logger_provider
    )
    handler = TelemetryHandler(
        tracer_provider=tel.tracer_provider, logger_provider=tel.logger_provider
    )
    client = OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0)

    if latest:  # util-genai >= 1.0 API
        from opentelemetry.util.genai.types import (
            FunctionToolDefinition,
            InputMessage,
            OutputMessage,
            Text,
        )

        def run_tool(tc, result, tool_def):
            name = tc["function"]["name"]
            with handler.tool(
                name,
                tool_call_id=tc.get("id"),
                tool_type="function",
                tool_description=(tool_def or {}).get("description"),
            ) as inv:
                if inv.should_capture_content_on_span:
                    inv.arguments = _args(tc)[1]
                    inv.tool_result = result

        with handler.invoke_local_agent(
            agent_name=info.agent_name, request_model=info.model
        ) as agent:
            agent.input_messages = [
                InputMessage(role="user", parts=[Text(content=u)]) for u in info.user_inputs
            ]
            agent.system_instruction = [Text(content=s) for s in info.system]
            agent.tool_definitions = [
                FunctionToolDefinition(
                    name=n, description=d.get("description"), parameters=d.get("parameters")
                )
                for n, d in info.tools.items()
            ]
            completions = replay_loop(client, info, run_tool)
            agent.input_tokens, agent.output_tokens = _usage_sum(completions)
            agent.finish_reasons = _finish_reasons(completions) or None
            final = _text(completions[-1]) if completions else None
            if final is not None:
                agent.output_messages = [
                    OutputMessage(
                        role="assistant", parts=[Text(content=final)], finish_reason="stop"
                    )
                ]
    else:  # util-genai 0.4b0 API (the only one with the v1.30 default mode)

        def run_tool(tc, result, tool_def):
            name = tc["function"]["name"]
            inv = handler.start_tool(
                name,
                arguments=_args(tc)[1],
                tool_call_id=tc.get("id"),
                tool_type="function",
                tool_description=(tool_def or {}).get("description"),
            )
            inv.tool_result = result
            inv.stop()

        agent = handler.start_invoke_local_agent("openai", request_model=info.model)
        agent.agent_name = info.agent_name
        try:
            completions = replay_loop(client, info, run_tool)
        except BaseException as exc:
            from opentelemetry.util.genai.types import Error

            agent.fail(Error(message=str(exc), type=type(exc)))
            raise
        agent.input_tokens, agent.output_tokens = _usage_sum(completions)
        agent.finish_reasons = _finish_reasons(completions) or None
        agent.stop()


def run_openinference(info: ConversationInfo, server: ReplayServer, tel: Telemetry) -> None:
    from openai import OpenAI
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from openinference.semconv.trace import SpanAttributes

    OpenAIInstrumentor().instrument(tracer_provider=tel.tracer_provider)
    tracer = OITracer(tel.tracer_provider.get_tracer(SCOPE), config=TraceConfig())
    client = OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0)

    def run_tool(tc, result, tool_def):
        name = tc["function"]["name"]
        with tracer.start_as_current_span(name, openinference_span_kind="tool") as span:
            span.set_tool(
                name=name,
                description=(tool_def or {}).get("description"),
                parameters=(tool_def or {}).get("parameters") or {},
            )
            if tc.get("id"):
                span.set_attribute(
                    "tool.id", tc["id"]
                )  # spec attribute, no constant in semconv 0.1.x
            span.set_input(_args(tc)[0], mime_type="application/json")
            span.set_output(result, mime_type="text/plain")

    with tracer.start_as_current_span(info.agent_name, openinference_span_kind="agent") as agent:
        agent.set_attribute(getattr(SpanAttributes, "AGENT_NAME", "agent.name"), info.agent_name)
        if info.user_inputs:
            agent.set_input(
                info.user_inputs[-1]
                if len(info.user_inputs) == 1
                else json.dumps(info.user_inputs),
                mime_type="text/plain" if len(info.user_inputs) == 1 else "application/json",
            )
        completions = replay_loop(client, info, run_tool)
        final = _text(completions[-1]) if completions else None
        if final is not None:
            agent.set_output(final, mime_type="text/plain")


def run_traceloop(info: ConversationInfo, server: ReplayServer, tel: Telemetry, mode: str) -> None:
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool, workflow
    from traceloop.sdk.instruments import Instruments

    Traceloop.init(
        app_name=SERVICE_NAME,
        exporter=tel.span_exporter,
        disable_batch=True,
        telemetry_enabled=False,
        instruments={Instruments.OPENAI},
        use_attributes=(mode == "attributes"),
    )
    from openai import OpenAI

    client = OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0)

    def run_tool(tc, result, tool_def):
        name = tc["function"]["name"]

        def tool_fn(**kwargs):
            return result

        tool_fn.__name__ = name
        traced = tool(name=name)(tool_fn)
        args = _args(tc)[1]
        traced(**args) if isinstance(args, dict) else traced(args)

    @agent(name=info.agent_name)
    def run_agent(user_inputs: list[str]) -> str | None:
        completions = replay_loop(client, info, run_tool)
        return _text(completions[-1]) if completions else None

    @workflow(name=info.agent_name.replace("-", "_") + "_conversation")
    def conversation(user_inputs: list[str]) -> str | None:
        return run_agent(user_inputs)

    conversation(info.user_inputs)


# --------------------------------------------------------------- frameworks


def _recorded_tool_fn(name: str, recorded: list[dict], calls: list[dict]):
    """A tool function returning the cassette's recorded result for these arguments."""

    def fn(**kwargs):
        calls.append({"name": name, "arguments": kwargs})
        for rec in recorded:
            if rec["name"] == name and rec["arguments"] == kwargs and not rec.get("_used"):
                rec["_used"] = True
                return rec["result"]
        for rec in recorded:  # same arguments requested twice: reuse the result
            if rec["name"] == name and rec["arguments"] == kwargs:
                return rec["result"]
        raise RuntimeError(f"no recorded result for {name}({kwargs!r})")

    fn.__name__ = name
    return fn


def run_pydantic_ai(
    info: ConversationInfo, server: ReplayServer, tel: Telemetry, mode: str, path: str
) -> dict:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    Agent.instrument_all(
        InstrumentationSettings(
            tracer_provider=tel.tracer_provider, include_content=True, version=int(mode)
        )
    )
    recorded = cassette.answered_tool_calls(path)
    calls: list[dict] = []
    tools = [
        Tool.from_schema(
            _recorded_tool_fn(name, recorded, calls),
            name=name,
            description=d.get("description"),
            json_schema=d.get("parameters") or {"type": "object", "properties": {}},
        )
        for name, d in info.tools.items()
    ]
    model = OpenAIChatModel(
        info.model, provider=OpenAIProvider(base_url=server.base_url, api_key=API_KEY)
    )
    agent = Agent(
        model,
        name=info.agent_name,
        instructions="\n\n".join(info.system) or None,
        tools=tools,
    )
    prompt = info.user_inputs[0] if info.user_inputs else ""
    if (info.inters[0].request_body or {}).get("stream"):

        async def _drain(ctx, events):
            async for _ in events:
                pass

        result = agent.run_sync(prompt, event_stream_handler=_drain)
    else:
        result = agent.run_sync(prompt)
    return {"final_output": str(result.output), "tool_invocations": calls}


def run_agent_framework(
    info: ConversationInfo, server: ReplayServer, tel: Telemetry, path: str
) -> dict:
    from agent_framework import Agent, FunctionTool
    from agent_framework.observability import enable_instrumentation
    from agent_framework.openai import OpenAIChatCompletionClient

    enable_instrumentation(enable_sensitive_data=True)
    recorded = cassette.answered_tool_calls(path)
    calls: list[dict] = []
    tools = [
        FunctionTool(
            name=name,
            description=d.get("description") or "",
            func=_recorded_tool_fn(name, recorded, calls),
            input_model=d.get("parameters") or {"type": "object", "properties": {}},
        )
        for name, d in info.tools.items()
    ]
    client = OpenAIChatCompletionClient(model=info.model, api_key=API_KEY, base_url=server.base_url)
    agent = Agent(
        client, instructions="\n\n".join(info.system) or None, name=info.agent_name, tools=tools
    )
    prompt = info.user_inputs[0] if info.user_inputs else ""
    stream = bool((info.inters[0].request_body or {}).get("stream"))

    async def _run():
        if stream:
            response = agent.run(prompt, stream=True)
            async for _ in response:
                pass
            return await response.get_final_response()
        return await agent.run(prompt)

    response = asyncio.run(_run())
    return {"final_output": getattr(response, "text", None), "tool_invocations": calls}


# ---------------------------------------------------------------------- main


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in _VERSION_OF:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Replay a cassette through a real instrumentation; write OTLP."
    )
    parser.add_argument("--instrumentation", required=True, choices=INSTRUMENTATIONS)
    parser.add_argument("--cassette", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--mode",
        default=None,
        help="per instrumentation: " + "; ".join(f"{k}: {'|'.join(v)}" for k, v in MODES.items()),
    )
    parser.add_argument("--agent-name", default="weather-agent")
    args = parser.parse_args(argv)

    mode = args.mode or MODES[args.instrumentation][0]
    if mode not in MODES[args.instrumentation]:
        parser.error(
            f"--mode for {args.instrumentation} must be one of {MODES[args.instrumentation]}"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = str(Path(args.cassette).resolve())

    summary: dict[str, Any] = {
        "instrumentation": args.instrumentation,
        "mode": mode,
        "cassette": path,
        "agent_name": args.agent_name,
    }

    def dump_summary():
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")

    inters = cassette.load_interactions(path)
    try:
        cassette.require_chat_completions(inters, path)
        if args.instrumentation in FRAMEWORKS:
            ok, why = cassette.is_single_agent_loop(path)
            if not ok:
                raise Unsupported(
                    f"{args.instrumentation} runs a real agent loop; this cassette does not hold "
                    f"one: {why}"
                )
    except (Unsupported, ValueError) as exc:
        summary.update(status="unsupported", error=str(exc))
        dump_summary()
        print(f"unsupported: {exc}", file=sys.stderr)
        return 3

    configure_env(args.instrumentation, mode)
    tel = Telemetry(install_tracer_provider=args.instrumentation != "traceloop")
    info = ConversationInfo(inters, args.agent_name)
    status, rc = "ok", 0
    server = ReplayServer(path).start()
    try:
        extra = None
        if args.instrumentation in ("openai-v2-default", "openai-v2-latest"):
            run_openai_v2(info, server, tel, latest=args.instrumentation == "openai-v2-latest")
        elif args.instrumentation == "openinference":
            run_openinference(info, server, tel)
        elif args.instrumentation == "traceloop":
            run_traceloop(info, server, tel, mode)
        elif args.instrumentation == "pydantic-ai":
            extra = run_pydantic_ai(info, server, tel, mode, path)
        elif args.instrumentation == "agent-framework":
            extra = run_agent_framework(info, server, tel, path)
        if extra:
            summary["framework_result"] = extra
    except Exception as exc:  # keep whatever was recorded
        status, rc = "error", 1
        summary["error"] = f"{type(exc).__name__}: {exc}"
        summary["traceback"] = traceback.format_exc()
        traceback.print_exc()
    finally:
        server.stop()
    with contextlib.suppress(Exception):
        tel.flush()
    summary.update(tel.write(out))
    (out / "requests.json").write_text(json.dumps(server.requests, indent=2) + "\n")
    summary.update(
        status=status,
        recorded_interactions=len(inters),
        served_requests=len(server.requests),
        versions=_versions(),
    )
    dump_summary()
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
