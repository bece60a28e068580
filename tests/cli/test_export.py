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
