"""``tracegrade ui`` on the command line: bad options are usage errors (exit 2) that say why."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from tracegrade.cli import cli
from tracegrade.store.traces import Store


def _store(path: Path) -> Path:
    """A store that exists (``ui`` reads one; it never creates it)."""
    Store(path).close()
    return path


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        args = ["ui", "--db", str(_store(tmp_path / "s.db")), "--port", str(port)]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.output


def test_a_missing_dataset_file_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ui", "--dataset", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "nope.yaml" in result.output


def test_the_token_comes_from_the_environment_too(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        args = ["ui", "--db", str(_store(tmp_path / "s.db")), "--host", "0.0.0.0", "--port", port]
        accepted = CliRunner().invoke(cli, args, env={"TRACEGRADE_UI_TOKEN": "t"})
        refused = CliRunner().invoke(cli, args, env={"TRACEGRADE_UI_TOKEN": ""})
    assert accepted.exit_code == 2 and "cannot listen on 0.0.0.0" in accepted.output
    assert refused.exit_code == 2 and "TRACEGRADE_UI_TOKEN" in refused.output


def test_a_store_that_cannot_be_opened_is_refused_at_start_up(tmp_path: Path) -> None:
    """``ui --db DIRECTORY`` used to print "serving" and answer every page with HTTP 500;
    like every other command it now refuses at start-up (before binding) and says why. A
    subprocess with a timeout: before the fix the command served until killed."""
    for env in ({}, {"TRACEGRADE_DB": str(tmp_path)}):
        args = ["ui", "--port", "0"] + ([] if env else ["--db", str(tmp_path)])
        result = subprocess.run(
            [sys.executable, "-m", "tracegrade", *args],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, **env},
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert "serving" not in result.stdout
        assert f"{tmp_path} is a directory" in result.stderr
        assert str(tmp_path / "tracegrade.db") in result.stderr
