"""Issue 24: the run document is typed and versioned: every document tracegrade writes
(``score``, ``run``, the pytest plugin, earlier versions' stored documents) validates as a
:class:`~tracegrade.run_document.RunDocument`, and a bad one is refused at the edge with the
field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracegrade.cli import cli
from tracegrade.compare import read_document
from tracegrade.errors import InputError
from tracegrade.run_document import RunDocument, json_schema

DATA = Path(__file__).parents[1] / "data"
TAU = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp" / "openinference"


def test_a_score_document_validates_and_round_trips(tmp_path):
    path = tmp_path / "r.json"
    result = CliRunner().invoke(
        cli, ["score", str(TAU / "traces.jsonl.gz"), "--json", str(path), "--no-save"]
    )
    assert result.exit_code in (0, 1), result.output
    data = json.loads(path.read_text())
    doc = RunDocument.from_json(data)
    assert doc.summary.results == len(doc.cases) == 25
    assert RunDocument.from_json(doc.to_json()) == doc


def test_a_bad_field_is_named_at_the_edge(tmp_path):
    path = tmp_path / "r.json"
    CliRunner().invoke(
        cli, ["score", str(TAU / "traces.jsonl.gz"), "--json", str(path), "--no-save"]
    )
    data = json.loads(path.read_text())
    data["cases"][3]["passed"] = "maybe"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"cases\.3\.passed"):
        read_document(path)


def test_the_schema_is_published():
    schema = json_schema()
    assert schema["$id"] == "tracegrade.run/1"
    assert {"run", "summary", "cases"} <= set(schema["properties"])
