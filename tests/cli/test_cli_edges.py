"""Command-line edges found by trying tracegrade as a new user would (issue 10 items 15,
17, 18): text files, empty or missing stores, bad ``--mapping`` files."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tracegrade.cli import cli

DATASETS = Path(__file__).parents[2] / "datasets"
TEXT = DATASETS / "SOURCES.md"
"""A real text file of the repository (Markdown, not JSON)."""


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_10_15_score_and_import_name_the_lines_of_a_text_file():
    for command in ("score", "import"):
        result = run(command, TEXT)
        assert result.exit_code == 2, result.output
        assert f"{TEXT}:1: text line, not JSON" in result.stderr
        assert "Wire format" not in result.stderr and "protobuf:" not in result.stderr
