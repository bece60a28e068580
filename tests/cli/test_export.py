"""``tracegrade export``: stored traces back out in the Collector file format, losslessly."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tracegrade.cli import cli

DEFAULT = (
    Path(__file__).parents[2]
    / "datasets"
    / "tau-bench-otlp"
    / "otel_genai_default"
    / "traces.jsonl.gz"
)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def inspect_json(path: Path) -> dict:
    return {
        t["trace_id"]: t
        for t in map(json.loads, run("inspect", "--json", path).stdout.splitlines())
    }


def test_export_then_inspect_equals_the_original(tmp_path):
    assert run("import", DEFAULT).exit_code == 0
    out = tmp_path / "exported" / "traces.jsonl.gz"
    result = run("export", out)
    assert result.exit_code == 0 and (out.parent / "logs.jsonl.gz").exists()
    assert inspect_json(out) == inspect_json(DEFAULT)


def test_export_protobuf_and_filter_by_trace_id(tmp_path):
    run("import", DEFAULT)
    trace_id = "11a7a50f6c121793abe4f59a02f3886d"
    out = tmp_path / "traces.binpb"
    assert run("export", out, "--format", "proto", "--trace-id", trace_id).exit_code == 0
    assert list(inspect_json(out)) == [trace_id]


def test_export_in_batches_writes_one_request_per_batch_and_loses_nothing(tmp_path, monkeypatch):
    """Issue 16.1: the store is read and written a batch at a time (here 10 of 25 traces)."""
    from tracegrade.cli import export

    monkeypatch.setattr(export, "BATCH", 10)
    run("import", DEFAULT)
    for fmt, name in (("json", "traces.jsonl"), ("proto", "traces.binpb")):
        out = tmp_path / fmt / name
        assert run("export", out, "--format", fmt).exit_code == 0
        assert inspect_json(out) == inspect_json(DEFAULT)
    assert len((tmp_path / "json" / "traces.jsonl").read_text().splitlines()) == 3
