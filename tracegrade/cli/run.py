"""``tracegrade run``: drive an instrumented agent through a golden dataset and score its traces."""

from __future__ import annotations

import sys

import click

from tracegrade.cli.gate_options import gate_options
from tracegrade.cli.judge_check import judge_options
from tracegrade.cli.options import (
    config_option,
    pass_options,
    report_options,
    scorer_option,
    stacked,
    tier_options,
    warn,
)
from tracegrade.dataset import Tier
from tracegrade.pipeline.run import AgentOptions, RunOptions, run
from tracegrade.report.comparison import print_comparison
from tracegrade.report.console import print_report
from tracegrade.runner.agents import DEFAULT_BODY, InputFormat, OtlpProtocol
from tracegrade.store.traces import DB_ENV

_agent_options = stacked(
    [
        click.option(
            "--agent",
            "agent_ref",
            metavar="MODULE:FUNCTION",
            help="In-process Python agent: a sync or async function taking the user message "
            "(or the conversation) and returning the reply.",
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
            "--reply-field",
            metavar="PATH",
            help="--agent-url: dotted path of the reply in the JSON response (default: reply, "
            "content, message, output, answer or text).",
        ),
    ]
)


_receiver_options = stacked(
    [
        click.option(
            "--db",
            "db",
            default=None,
            envvar=DB_ENV,
            show_envvar=True,
            metavar="PATH|URL",
            help="Trace store for the run's traces and results (default: a temporary store).",
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


@click.command("run")
@click.argument("dataset_path", metavar="DATASET", type=click.Path(exists=True, dir_okay=False))
@_agent_options
@tier_options
@click.option(
    "--tags", multiple=True, help="Only cases with any of these tags (comma-separated, repeatable)."
)
@click.option(
    "--case", "case_ids", multiple=True, metavar="ID", help="Only this case (repeatable)."
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Cases run at once.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    help="Seconds a case's conversation may take; past it the case fails.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run each case N times: median score, spread, flaky cases.",
)
@click.option("--label", help="Free text stored with the run (agent version, model).")
@pass_options
@scorer_option
@config_option
@_receiver_options
@report_options
@click.option(
    "--no-save", is_flag=True, help="Do not store the run (a temporary store is never kept)."
)
@click.option(
    "--judge/--no-judge",
    "judge_mode",
    default=None,
    help="LLM judge: by default cases with a judge rubric; --judge every case; --no-judge none "
    "(and no judge clarifications).",
)
@judge_options
@gate_options
def command(
    dataset_path: str,
    agent_ref: str | None,
    agent_cmd: str | None,
    agent_url: str | None,
    input_format: InputFormat,
    otlp_protocol: OtlpProtocol,
    body: str,
    headers: tuple[str, ...],
    reply_field: str | None,
    tier: Tier | None,
    tags: tuple[str, ...],
    case_ids: tuple[str, ...],
    concurrency: int,
    timeout: float,
    repeat: int,
    label: str | None,
    threshold: float | None,
    min_pass_rate: float,
    scorer_refs: tuple[str, ...],
    config_path: str | None,
    db: str | None,
    otlp_grpc_port: int,
    otlp_http_port: int,
    settle_quiet: float | None,
    settle_timeout: float,
    json_path: str | None,
    junit_path: str | None,
    verbose: bool,
    no_save: bool,
    judge_mode: bool | None,
    judge_model: str | None,
    judge_concurrency: int,
    judge_repeat: int,
    baseline: str | None,
    alpha: float | None,
    alert_webhook: str | None,
    markdown_path: str | None,
    min_score: float | None,
) -> None:
    """Run every selected case of DATASET against the agent (exactly one of --agent,
    --agent-cmd, --agent-url), wait for each case's traces in an in-process OTLP receiver,
    score them as `tracegrade score` does and print the report. Exit 0 when the run passes, 1
    below threshold, 2 on a usage or config error, when no case produced a trace, or on Ctrl-C."""
    agent = AgentOptions(
        agent_ref,
        agent_cmd,
        agent_url,
        input_format,
        otlp_protocol,
        body,
        headers,
        reply_field,
        settle_quiet,
        settle_timeout,
    )
    options = RunOptions(
        dataset=dataset_path,
        agent=agent,
        tier=tier,
        tags=tags,
        case_ids=case_ids,
        concurrency=concurrency,
        timeout=timeout,
        repeat=repeat,
        label=label,
        threshold=threshold,
        min_pass_rate=min_pass_rate,
        scorer_refs=scorer_refs,
        config=config_path,
        db=db,
        otlp_grpc_port=otlp_grpc_port,
        otlp_http_port=otlp_http_port,
        json_path=json_path,
        junit_path=junit_path,
        verbose=verbose,
        save=not no_save,
        judge=judge_mode,
        judge_model=judge_model,
        judge_concurrency=judge_concurrency,
        judge_repeat=judge_repeat,
        baseline=baseline,
        alpha=alpha,
        alert_webhook=alert_webhook,
        markdown_path=markdown_path,
        min_score=min_score,
    )
    outcome = run(options)
    print_report(outcome.document, verbose=verbose)
    if outcome.comparison is not None:
        print_comparison(outcome.comparison)
    warn(outcome.warnings)
    if outcome.problem:
        click.echo(outcome.problem, err=True)
    sys.exit(int(outcome.exit_code))
