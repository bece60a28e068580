"""Issue 10 item 19 (moved to the docs by issue 27): the command reference of the docs
(``docs/reference/cli.md``) lists every command and option that exists, because it is
generated from the click commands (``python -m tracegrade.cli.reference --write
docs/reference/cli.md``) and this test fails when they disagree."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import click
from click.testing import CliRunner

from tracegrade.cli import COMMANDS
from tracegrade.cli.reference import END, START, main, reference

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "reference" / "cli.md"


def _block(text: str) -> str:
    return text[text.index(START) + len(START) : text.index(END)].strip()


def test_10_19_the_docs_command_reference_is_what_the_click_commands_define():
    assert _block(PAGE.read_text(encoding="utf-8")) == reference(), (
        "docs/reference/cli.md's command reference is stale: run "
        "`python -m tracegrade.cli.reference --write docs/reference/cli.md`"
    )


def _commands(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, f"{path} {name}")
    return found


def _entry(text: str, path: str, command: click.Command) -> str:
    """The lines of ``tracegrade PATH`` (not of its sub-commands) in the reference."""
    subcommands = set(getattr(command, "commands", {}))
    for entry in text.split("\ntracegrade ")[1:]:
        rest = entry.removeprefix(path)
        if (
            rest != entry
            and rest[:1] in ("", " ", "\n")
            and rest.split()[:1] != []
            and (rest.split()[0] not in subcommands)
        ):
            return entry
    raise AssertionError(f"no entry for tracegrade {path}")


def test_10_19_the_reference_names_every_command_and_every_option():
    text = "\n" + reference().strip("`\n")
    for name, (module, _) in COMMANDS.items():
        for path, command in _commands(importlib.import_module(module).command, name):
            entry = _entry(text, path, command)
            for param in command.params:
                if isinstance(param, click.Option) and not param.hidden:
                    opt = param.opts[0]
                    assert any(f"[{opt}{end}" in entry for end in " ]|"), (path, opt)


def test_10_19_check_fails_on_a_stale_page(tmp_path):
    stale = tmp_path / "cli.md"
    stale.write_text(PAGE.read_text(encoding="utf-8").replace("[--status-every X]", ""))
    result = CliRunner().invoke(main, ["--check", str(stale)])
    assert result.exit_code == 1 and "--write docs/reference/cli.md" in result.stderr
    assert CliRunner().invoke(main, ["--write", str(stale)]).exit_code == 0
    assert CliRunner().invoke(main, ["--check", str(stale)]).exit_code == 0


def test_10_19_license_is_an_spdx_string():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
