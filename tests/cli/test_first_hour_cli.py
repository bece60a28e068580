"""Issue 35, defect 8: the console report of a run whose every case failed in the agent has
no empty averages table, and its header counts the cases that ran ("1 of 23 cases" with
``--case``); a help text's pointer to the docs names a page that exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click

from tests.support.ports import free_port
from tracegrade.cli import cli

REPO = Path(__file__).resolve().parents[2]


def test_every_case_failing_in_the_agent_prints_no_empty_table_and_counts_what_ran(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env |= {"OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "OPENAI_API_KEY": "x"}
    env |= {"COLUMNS": "200", "PYTHONPATH": str(REPO)}
    command = [
        sys.executable,
        "-m",
        "tracegrade",
        "run",
        str(REPO / "datasets/ecommerce/golden.yaml"),
    ]
    command += ["--agent", "examples.ecommerce.agent:answer", "--case", "headphones-under-300"]
    command += ["--no-save", "--db", str(tmp_path / "s.db")]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0, done.stdout
    assert "· dataset ecommerce (1 of 23 cases) ·" in done.stdout, done.stdout
    assert "averages" not in done.stdout and "axis / scorer" not in done.stdout
    assert "1 case(s) failed in the agent" in done.stdout


def _help(command: click.Command) -> str:
    """Every help text of ``command`` and its subcommands: its own and its options'."""
    texts = [command.help or ""]
    texts += [p.help or "" for p in command.params if isinstance(p, click.Option)]
    if isinstance(command, click.Group):  # subcommands may load lazily
        context = click.Context(command)
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            texts += [_help(sub)] if sub is not None else []
    return " ".join(texts)


def test_help_points_to_docs_that_exist() -> None:
    text = re.sub(r"\s+", " ", _help(cli))
    pages = re.findall(r"docs/[\w/.-]+\.md", text)
    assert "docs/guides/receiving-otlp.md" in pages  # collect --max-memory-mib
    assert all((REPO / page).is_file() for page in pages), pages
    assert "README, '" not in text  # README sections move; the docs pages are the reference
