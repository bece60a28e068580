"""Issue 35, defect 1: a command that only reads the store, given a store that does not exist
(``--db``, ``$TRACEGRADE_DB`` or the default location), exits 2 with "no store at PATH" and
creates nothing; only the writers (``collect``, ``import``, ``score``, ``run``) create one."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.cli.test_cli_edges import TRACES
from tracegrade.cli import cli

READERS = [
    ("runs",),
    ("runs", "show", "latest"),
    ("runs", "baseline", "latest"),
    ("review", "queues"),
    ("review", "next", "q"),
    ("prune", "--older-than", "7d", "--dry-run"),
    ("dataset", "build", "--out", "golden.yaml"),
    ("dataset", "export", "name"),
    ("history",),
    ("ui", "--port", "0"),
    ("inspect",),
    ("lint",),
    ("export", "out.jsonl"),
    ("agreement",),
]


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_a_reader_of_a_missing_store_exits_2_and_creates_nothing(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACEGRADE_DB", raising=False)
    missing = tmp_path / "nope.db"
    result = CliRunner().invoke(cli, [*args, "--db", str(missing)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: no store at {missing}: "), result.stderr
    assert result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_the_default_location_is_not_created_by_a_reader(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACEGRADE_DB", raising=False)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2
    assert "no store at .tracegrade/tracegrade.db" in result.stderr
    assert not (tmp_path / ".tracegrade").exists()


def test_a_reader_given_files_needs_no_store_and_a_writer_creates_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACEGRADE_DB", raising=False)
    db = tmp_path / "t.db"
    assert CliRunner().invoke(cli, ["inspect", str(TRACES), "--limit", "1"]).exit_code == 0
    assert not db.exists()
    assert CliRunner().invoke(cli, ["import", str(TRACES), "--db", str(db)]).exit_code == 0
    assert db.is_file()
    result = CliRunner().invoke(cli, ["runs", "--db", str(db)])
    assert result.exit_code == 0 and "no stored runs" in result.output
