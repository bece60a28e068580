"""Command line: ``python -m examples.ecommerce "message"`` (or the message on stdin).

Prints the assistant's reply on stdout. Telemetry is configured from the standard
OpenTelemetry variables (see :mod:`examples.ecommerce.telemetry`): spans are batched to the
exporter ``OTEL_TRACES_EXPORTER`` names and flushed before exit, and
``OTEL_RESOURCE_ATTRIBUTES`` (e.g. ``tracegrade.case_id=...``) labels every span, which is
how ``tracegrade run --agent-cmd`` links this process's trace to its case. With
``--messages`` the input is the conversation so far as a JSON list of ``{"role", "content"}``.
With ``--conversation-id ID --threads PATH`` the assistant keeps the conversation itself, in
the SQLite file PATH (:mod:`examples.ecommerce.threads`), and the input is the customer's
latest message: ``tracegrade run --agent-cmd "python -m examples.ecommerce --conversation-id
{conversation_id} --threads threads.db"`` survives an agent revival.

Exit codes: 0 replied, 1 the agent failed (the reason on stderr), 2 bad input or usage.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click


def _read_input(message: str | None, messages: bool) -> str | list:
    text = message if message is not None else sys.stdin.read()
    if not messages:
        if not text.strip():
            raise click.UsageError("no message: pass it as an argument or on stdin")
        return text.strip()
    try:
        conversation = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--messages: the input is not JSON: {exc}") from exc
    if not isinstance(conversation, list):
        raise click.UsageError(
            "--messages: the input must be a JSON list of {role, content} objects"
        )
    return conversation


def _agent(conversation_id: str | None, threads: str | None) -> Callable[[Any], str]:
    """The assistant, keeping the conversation in ``threads`` when given."""
    from examples.ecommerce.agent import answer  # the openai client takes a second to import

    if conversation_id is None or threads is None:
        return answer
    from examples.ecommerce.threads import SqliteThreads, reply_in_thread

    store = SqliteThreads(threads)
    return lambda text: reply_in_thread(store, conversation_id, text)


@click.command()
@click.argument("message", required=False)
@click.option(
    "--messages", is_flag=True, help="The input is a JSON list of {role, content} messages."
)
@click.option("--conversation-id", help="The conversation, kept in --threads.")
@click.option(
    "--threads",
    metavar="PATH",
    help="SQLite file of the conversations (with --conversation-id): the thread is loaded "
    "before and stored after the reply.",
)
def main(
    message: str | None, messages: bool, conversation_id: str | None, threads: str | None
) -> None:
    """Ask the example shop assistant MESSAGE (or read it from stdin) and print the reply."""
    if (conversation_id is None) != (threads is None) or (threads and messages):
        raise click.UsageError("give --conversation-id and --threads together, without --messages")
    user_input = _read_input(message, messages)
    answer = _agent(conversation_id, threads)
    from examples.ecommerce.telemetry import configure_tracing

    try:
        provider = configure_tracing()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        reply = answer(user_input)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    except Exception as exc:  # the agent failed: report it, exit 1, still flush the spans
        click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    finally:
        provider.shutdown()
    click.echo(reply)


if __name__ == "__main__":
    main()
