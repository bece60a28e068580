"""Issue 35, defect 3: a trace file given as ``--dataset`` (or as ``run``'s DATASET), or a
golden dataset given as a trace FILE, is recognised, and the error says which option to use,
in one line (not one per record)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracegrade.cli import cli
from tracegrade.otlp.files import golden_dataset_kind, trace_file_kind

ROOT = Path(__file__).parents[2]
TRACES = ROOT / "datasets" / "tau-bench-otlp" / "openinference" / "traces.jsonl.gz"
GOLDEN_YAML = ROOT / "datasets" / "ecommerce" / "golden.yaml"
GOLDEN_JSON = ROOT / "datasets" / "e-commerce-agents" / "order_management.json"


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def plain_traces(tmp_path) -> Path:
    """Three lines of the Collector's OTLP/JSON file, uncompressed (long lines)."""
    lines = gzip.decompress(TRACES.read_bytes()).splitlines()[:3]
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.fixture
def golden_jsonl(tmp_path) -> Path:
    cases = json.loads(GOLDEN_JSON.read_text())
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def _one_line(result, expected: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert expected in result.stderr, result.stderr


@pytest.mark.parametrize("which", ["gzip", "plain"])
def test_a_trace_file_as_the_dataset_says_to_give_it_as_the_traces(which, plain_traces):
    traces = TRACES if which == "gzip" else plain_traces
    result = run("score", traces, "--dataset", traces, "--no-save")
    _one_line(result, "not a golden dataset: give it as the traces (tracegrade score ")
    result = run("run", traces, "--agent-cmd", "echo hi", "--no-save")
    _one_line(result, "not a golden dataset: give it as the traces")


@pytest.mark.parametrize("which", ["yaml", "json", "jsonl"])
def test_a_dataset_as_a_trace_file_says_to_give_it_with_dataset(which, golden_jsonl):
    dataset = {"yaml": GOLDEN_YAML, "json": GOLDEN_JSON, "jsonl": golden_jsonl}[which]
    for command in ("score", "inspect", "import"):
        result = run(command, dataset, *(["--no-save"] if command == "score" else []))
        _one_line(result, "not a trace file: give it with --dataset")


def test_the_detection_leaves_real_files_alone(plain_traces, golden_jsonl):
    for traces in (TRACES, plain_traces):
        assert golden_dataset_kind(traces) is None
    transcripts = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
    assert golden_dataset_kind(transcripts) is None
    assert golden_dataset_kind(ROOT / "README.md") is None  # text: its lines report errors
    for dataset in (GOLDEN_YAML, GOLDEN_JSON, golden_jsonl):
        assert trace_file_kind(dataset.read_bytes()) is None
    assert golden_dataset_kind(golden_jsonl) == "a golden dataset (JSON lines)"
    assert trace_file_kind(plain_traces.read_bytes()) == "an OTLP/JSON trace file"
