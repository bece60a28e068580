"""tracegrade.sources: the streaming entry points give what reading everything gives."""

from __future__ import annotations

import gzip
from pathlib import Path

from tracegrade import sources
from tracegrade.normalize import normalize_all
from tracegrade.otlp.files import read_paths

CORPUS = Path(__file__).parents[1] / "datasets" / "tau-bench-otlp" / "otel_genai_default"


def test_batches_normalised_in_two_processes_equal_normalising_everything_at_once():
    payloads = read_paths([CORPUS / "traces.jsonl.gz"])
    whole = normalize_all(payloads.spans(), payloads.log_records())
    errors: list = []
    batches = list(
        sources.iter_from_files(
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
    batches = list(sources.iter_from_files([path], batch_size=10, errors=errors))
    assert [e.line for e in errors] == [4] and sum(len(b) for b in batches) == 24


def test_the_cli_prints_an_error_met_only_by_the_read_pass(tmp_path, capsys):
    from tracegrade.cli.options import _reporting

    text = gzip.decompress((CORPUS / "traces.jsonl.gz").read_bytes()).splitlines(keepends=True)
    text[3] = text[3].replace(b'"kind":', b'"kind":,', 1)  # looks canonical, is not JSON
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"".join(text))
    errors: list = []
    batches = _reporting(sources.iter_from_files([path], batch_size=10, errors=errors), errors)
    assert next(batches) and "error:" not in capsys.readouterr().err  # not known yet
    list(batches)
    assert f"error: {path}:4: invalid JSON" in capsys.readouterr().err
