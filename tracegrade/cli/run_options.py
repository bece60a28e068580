"""``tracegrade run``'s agent and receiver options."""

from __future__ import annotations

import click

from tracegrade.cli.options import stacked
from tracegrade.environment import TRACEGRADE_SIMULATOR_MODEL
from tracegrade.runner.agents import DEFAULT_BODY
from tracegrade.store.traces import DB_ENV

agent_options = stacked(
    [
        click.option(
            "--agent",
            "agent_ref",
            metavar="MODULE:FUNCTION",
            help="In-process Python agent: a sync or async function taking the user message "
            "(or the conversation) and returning the reply; or a factory (no required "
            "arguments) returning one, called per session, so a revival rebuilds the agent.",
        ),
        click.option(
            "--agent-cmd",
            metavar="COMMAND",
            help="Agent command (any language), run by the shell once per turn; input on stdin, "
            "or {input} / {messages} in the command.",
        ),
        click.option(
            "--agent-url", metavar="URL", help="A running agent service: one JSON POST per turn."
        ),
        click.option(
            "--input-format",
            type=click.Choice(["text", "messages"]),
            default="text",
            show_default=True,
            help="--agent-cmd stdin: the latest user message, or the conversation as JSON.",
        ),
        click.option(
            "--otlp-protocol",
            type=click.Choice(["http/protobuf", "grpc"]),
            default="http/protobuf",
            show_default=True,
            help="OTEL_EXPORTER_OTLP_PROTOCOL given to --agent-cmd.",
        ),
        click.option(
            "--body",
            default=DEFAULT_BODY,
            show_default=True,
            help='--agent-url JSON body template: {input}, "{messages}", {case_id}, '
            "{conversation_id}.",
        ),
        click.option(
            "--header",
            "headers",
            multiple=True,
            metavar="'NAME: VALUE'",
            help="Extra --agent-url request header (repeatable).",
        ),
        click.option(
            "--revive-cmd",
            metavar="COMMAND",
            help="Run by the shell on each agent revival (cases with 'revive'), before the "
            "new session; needed for --agent-url: it restarts the service and returns once "
            "it accepts requests.",
        ),
        click.option(
            "--reply-field",
            metavar="PATH",
            help="--agent-url: dotted path of the reply in the JSON response (default: reply, "
            "content, message, output, answer or text).",
        ),
    ]
)


receiver_options = stacked(
    [
        click.option(
            "--db",
            "db",
            default=None,
            envvar=DB_ENV,
            show_envvar=True,
            metavar="PATH|URL",
            help="Trace store for the run's traces and results (default "
            ".tracegrade/tracegrade.db, as score; with --no-save and no --db, a temporary store).",
        ),
        click.option(
            "--otlp-grpc-port",
            type=click.IntRange(0, 65535),
            default=0,
            help="Receiver OTLP/gRPC port (default: a free port).",
        ),
        click.option(
            "--otlp-http-port",
            type=click.IntRange(0, 65535),
            default=0,
            help="Receiver OTLP/HTTP port (default: a free port; fix it for --agent-url services).",
        ),
        click.option(
            "--settle-quiet",
            type=click.FloatRange(min=0),
            default=None,
            help="Seconds without new spans before a case's traces count as complete "
            "(default 0.2 for --agent-cmd, 1 for --agent-url; in-process needs none).",
        ),
        click.option(
            "--settle-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=10.0,
            show_default=True,
            help="Seconds to wait for a case's traces after the agent finished.",
        ),
    ]
)


simulator_options = stacked(
    [
        click.option(
            "--simulator",
            type=click.Choice(["auto", "scripted", "llm"]),
            default="auto",
            show_default=True,
            help="Who plays a case's simulated user: its scripted replies (user.replies), an "
            "LLM behind the judge's endpoint and key, or auto (scripted when the case scripts "
            "replies, else the LLM).",
        ),
        click.option(
            "--simulator-model",
            metavar="MODEL",
            envvar=TRACEGRADE_SIMULATOR_MODEL,
            show_envvar=True,
            help="The simulated users' model (default: the judge's).",
        ),
        click.option(
            "--simulator-temperature",
            type=click.FloatRange(0, 2),
            default=0.7,
            show_default=True,
            help="The simulated users' sampling temperature.",
        ),
        click.option(
            "--simulator-seed",
            type=int,
            default=0,
            show_default=True,
            help="Sent as the simulated users' request seed and part of their cache key: the "
            "same seed and agent replies give the same conversation, from the cache. Repeat k "
            "of a case (--repeat) plays with this seed plus k - 1.",
        ),
    ]
)
