"""tracegrade.pipeline.reading: the streaming entry points give what reading everything gives."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tracegrade.normalize import normalize_all
from tracegrade.otlp.files import read_paths
from tracegrade.pipeline import reading

CORPUS = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp" / "otel_genai_default"


def test_batches_normalised_in_two_processes_equal_normalising_everything_at_once():
    payloads = read_paths([CORPUS / "traces.jsonl.gz"])
    whole = normalize_all(payloads.spans(), payloads.log_records())
    errors: list = []
    batches = list(
        reading.iter_from_files(
            [CORPUS / "traces.jsonl.gz"], batch_size=10, errors=errors, workers=2
        )
    )
    assert [len(b) for b in batches] == [10, 10, 5] and errors == []
    assert [t for b in batches for t in b] == whole


def test_an_error_met_only_by_the_read_pass_is_added_when_the_batches_end(tmp_path):
    text = gzip.decompress((CORPUS / "traces.jsonl.gz").read_bytes()).splitlines(keepends=True)
    text[3] = text[3].replace(b'"kind":', b'"kind":,', 1)  # looks canonical, is not JSON
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"".join(text))
    errors: list = []
    batches = list(reading.iter_from_files([path], batch_size=10, errors=errors))
    assert [e.line for e in errors] == [4] and sum(len(b) for b in batches) == 24


def test_the_cli_prints_an_error_met_only_by_the_read_pass(tmp_path, capsys):
    from tracegrade.cli.options import report_errors
    from tracegrade.pipeline.reading import _reporting

    text = gzip.decompress((CORPUS / "traces.jsonl.gz").read_bytes()).splitlines(keepends=True)
    text[3] = text[3].replace(b'"kind":', b'"kind":,', 1)  # looks canonical, is not JSON
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"".join(text))
    errors: list = []
    batches = _reporting(
        reading.iter_from_files([path], batch_size=10, errors=errors), errors, report_errors
    )
    assert next(batches) and "error:" not in capsys.readouterr().err  # not known yet
    list(batches)
    assert f"error: {path}:4: invalid JSON" in capsys.readouterr().err


@pytest.mark.parametrize("limit", [(), ("--limit", "10")])
def test_score_with_two_workers_reports_a_corrupt_line_and_scores_as_one_process(tmp_path, limit):
    """The workers decode the traces' lines: the same errors, printed, the same cases."""
    from click.testing import CliRunner

    from tracegrade.cli import cli

    text = gzip.decompress((CORPUS / "traces.jsonl.gz").read_bytes()).splitlines(keepends=True)
    text[3] = text[3].replace(b'"kind":', b'"kind":,', 1)  # looks canonical, is not JSON
    text[9] = text[9].replace(b'"spans":[{', b'"spans":[{"unknown":1,', 1)  # not OTLP
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"".join(text * 3) + b"not json\n")  # 75 traces' lines, 25 trace ids
    outputs = []
    for workers in ("1", "2"):
        report = tmp_path / f"run-{workers}.json"
        args = ["score", str(path), "--no-save", "--json", str(report), "--workers", workers]
        result = CliRunner().invoke(cli, [*args, *limit])
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        doc = json.loads(report.read_text())
        outputs.append((result.exit_code, errors, doc["cases"], doc["summary"]))
    assert outputs[0] == outputs[1]
    assert len(outputs[0][1]) == 7  # one batch: the read ends before the limit applies
