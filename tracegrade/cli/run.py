"""``tracegrade run``: drive an instrumented agent through a golden dataset and score its traces."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from tracegrade.cli.judge_check import judge_cache, judge_options, make_judge
from tracegrade.cli.options import (
    config_option,
    pass_options,
    report_options,
    scorer_option,
    stacked,
    tier_options,
)
from tracegrade.compare.sources import CaseTable
from tracegrade.config import Config, load_config
from tracegrade.dataset import Tier, load_dataset, select_cases
from tracegrade.errors import ConfigError, ExitCode
from tracegrade.judge import Clarifier, resolve_settings
from tracegrade.pipeline.gate import (
    apply_min_score,
    compare_with_base,
    current_source,
    gate_options,
    publish_gate,
    resolve_base,
)
from tracegrade.pipeline.outputs import verdict, write_outputs
from tracegrade.report.console import print_report
from tracegrade.runner.agents import (
    DEFAULT_BODY,
    Agent,
    CommandAgent,
    HttpAgent,
    InputFormat,
    OtlpProtocol,
    PythonAgent,
)
from tracegrade.runner.conversation import (
    FollowUpHook,
    FollowUps,
    JudgeClarifications,
    ScriptedClarifications,
)
from tracegrade.runner.execute import RunPlan, Scoring
from tracegrade.runner.session import EvalRun, new_run_id, run_eval, store_location
from tracegrade.scoring import build_scorers, config_for
from tracegrade.scoring.evaluate import run_threshold, run_weights
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


def _headers(values: Sequence[str]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise ConfigError(f"--header {value!r}: expected 'Name: value'")
        headers[name.strip()] = content.strip()
    return headers


def make_agent(
    agent_ref: str | None,
    agent_cmd: str | None,
    agent_url: str | None,
    *,
    input_format: InputFormat,
    otlp_protocol: OtlpProtocol,
    body: str,
    headers: Sequence[str],
    reply_field: str | None,
    settle_quiet: float | None,
    settle_timeout: float,
) -> Agent:
    """The agent named by exactly one of ``--agent``, ``--agent-cmd``, ``--agent-url``.

    Raises:
        ConfigError: none or several given, or a bad spec (see each agent kind).
    """
    given = [
        name
        for name, value in (
            ("--agent", agent_ref),
            ("--agent-cmd", agent_cmd),
            ("--agent-url", agent_url),
        )
        if value
    ]
    if len(given) != 1:
        raise ConfigError(
            "give exactly one of --agent MODULE:FUNCTION, --agent-cmd COMMAND, --agent-url URL"
            + (f" (got {', '.join(given)})" if given else "")
        )
    if agent_ref:
        return PythonAgent(agent_ref)
    if agent_cmd:
        return CommandAgent(
            agent_cmd,
            input_format=input_format,
            protocol=otlp_protocol,
            quiet_s=0.2 if settle_quiet is None else settle_quiet,
            settle_timeout_s=settle_timeout,
        )
    return HttpAgent(
        agent_url or "",
        body=body,
        headers=_headers(headers),
        reply_field=reply_field,
        quiet_s=1.0 if settle_quiet is None else settle_quiet,
        settle_timeout_s=settle_timeout,
    )


def follow_up_hook(
    config: Config, judge_mode: bool | None, judge_model: str | None
) -> FollowUpHook:
    """Scripted clarifications, then the judge clarifier when a judge model is configured
    (``--judge-model`` or ``TRACEGRADE_JUDGE_MODEL``) and ``--no-judge`` is not given.

    Raises:
        ConfigError: a judge model is configured but no judge API key.
    """
    hooks: list[FollowUpHook] = [ScriptedClarifications()]
    if judge_model and judge_mode is not False:
        settings = resolve_settings(judge_model, pricing=config.pricing)
        settings.require_credentials()
        hooks.append(JudgeClarifications(Clarifier(settings)))
    return FollowUps(hooks)


def _clarifier_usage(hook: FollowUpHook) -> dict[str, Any] | None:
    for item in getattr(hook, "hooks", []):
        if isinstance(item, JudgeClarifications):
            usage = item.clarifier.usage.to_dict()  # type: ignore[attr-defined]
            return {**usage, "errors": list(item.errors)} if usage["calls"] or item.errors else None
    return None


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
    dataset = load_dataset(dataset_path)
    base = resolve_base(baseline, db, dataset.name, CaseTable()) if baseline else None
    cases = select_cases(dataset, tier, tags, case_ids)
    config = config_for(load_config(config_path), dataset)
    scorers = build_scorers(config, scorer_refs)
    judge = make_judge(
        config,
        dataset,
        cases,
        mode=judge_mode,
        model=judge_model,
        concurrency=judge_concurrency,
        repeat=judge_repeat,
    )
    scorers += [judge] if judge else []
    hook = follow_up_hook(config, judge_mode, judge_model)
    agent = make_agent(
        agent_ref,
        agent_cmd,
        agent_url,
        input_format=input_format,
        otlp_protocol=otlp_protocol,
        body=body,
        headers=headers,
        reply_field=reply_field,
        settle_quiet=settle_quiet,
        settle_timeout=settle_timeout,
    )
    threshold = run_threshold(threshold, dataset, config)
    plan = RunPlan(new_run_id(), cases, repeat=repeat, concurrency=concurrency, timeout_s=timeout)
    run = EvalRun(
        dataset,
        plan,
        agent,
        Scoring(scorers, config, run_weights(dataset, config), threshold),
        hook,
        db=db,
        grpc_port=otlp_grpc_port,
        http_port=otlp_http_port,
        tier=tier,
        min_pass_rate=min_pass_rate,
        label=label,
        config_sources=config.sources,
        verbose=verbose,
    )
    with store_location(db) as location, judge_cache(location, judge):
        doc = run_eval(run, location)
        if (usage := _clarifier_usage(hook)) is not None:
            doc["summary"]["clarifier"] = usage
        apply_min_score(doc, min_score)
        write_outputs(doc, location, json_path, junit_path, no_save or db is None)
        current = current_source(doc, base)
        comparison = compare_with_base(
            current, base, dbs=[location, db], config=config, alpha=alpha
        )
    print_report(doc, verbose=verbose)
    regression = publish_gate(doc, comparison, alert_webhook, markdown_path)
    code = _exit_code(doc)
    sys.exit(int(ExitCode.FAILED if regression and code == ExitCode.OK else code))


def _exit_code(doc: dict[str, Any]) -> ExitCode:
    summary, run = doc["summary"], doc["run"]
    if run["interrupted"]:
        click.echo(f"interrupted: {summary['results']} case(s) finished and reported", err=True)
        return ExitCode.USAGE
    if summary["unmatched_cases"] == summary["results"]:
        click.echo("error: no case produced a trace to score (see the reasons above)", err=True)
        return ExitCode.USAGE
    return verdict(doc)
