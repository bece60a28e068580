"""RAG traces on the command line: ``inspect`` shows the retrievals, ``score`` grounds answer
values in the retrieved documents and a case's reference (recorded LangChain and LlamaIndex
RAG runs, tests/data/frameworks/*-rag-*)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracegrade.cli import cli

ROOT = Path(__file__).parents[2]
RECORDINGS = ROOT / "tests" / "data" / "frameworks"
SETUPS = [
    "langchain-rag-openinference",
    "langchain-rag-openllmetry",
    "llamaindex-rag-openinference",
]
CATALOG = ROOT / "datasets" / "rag" / "catalog.yaml"


def run(*args):
    # A wide console: the assertions read whole lines, which 80 columns would fold.
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "200"})


def traces(setup: str) -> Path:
    return RECORDINGS / setup / "traces.binpb.gz"


@pytest.mark.parametrize("setup", SETUPS)
def test_inspect_shows_each_retrieval_and_its_documents(setup):
    result = run("inspect", traces(setup))
    assert result.exit_code == 0, result.output
    assert "retrieval " in result.output
    assert "(What is the price of the Borealis floor lamp?)" in result.output
    assert "lamp-borealis" in result.output and "Price $149.00." in result.output


def test_inspect_json_carries_the_retrievals():
    result = run("inspect", traces("langchain-rag-openinference"), "--json")
    docs = [
        d["id"]
        for line in result.output.splitlines()
        for r in json.loads(line)["retrievals"]
        for d in r["documents"]
    ]
    assert docs[:2] == ["lamp-aurora", "lamp-borealis"]


@pytest.mark.parametrize("setup", SETUPS)
def test_score_grounds_values_in_retrievals_and_names_the_invented_price(setup, tmp_path):
    out = tmp_path / "r.json"
    result = run("score", traces(setup), "--no-save", "--json", out)
    assert result.exit_code == 1, result.output  # the invented price fails its trace
    # LlamaIndex also exports the index build (embeddings only) as a trace: nothing to score
    cases = [c for c in json.loads(out.read_text())["cases"] if c["score"] is not None]
    failed = [c for c in cases if not c["passed"]]
    assert len(cases) == 3 and len(failed) == 1
    (bad,) = failed
    assert bad["scores"]["faithfulness"] == 0.0 and bad["scores"]["value_grounding"] == 0.0
    assert (
        "the answer states values no tool result, retrieved document or input contains: $129.00"
        in bad["reasons"]
    )
    assert all(c["scores"]["value_grounding"] == 1.0 for c in cases if c["passed"])


def test_a_dataset_with_reference_documents(tmp_path):
    out = tmp_path / "r.json"
    result = run(
        "score",
        traces("langchain-rag-openinference"),
        "--dataset",
        CATALOG,
        "--no-save",
        "--json",
        out,
    )
    assert result.exit_code == 1, result.output
    cases = {c["case_id"]: c for c in json.loads(out.read_text())["cases"]}
    assert cases["aurora-price"]["passed"] and cases["dune-and-cirrus"]["passed"]
    assert not cases["borealis-price"]["passed"]
    assert "unsupported: $129.00" in cases["borealis-price"]["reasons"][0]
    supported = cases["dune-and-cirrus"]["details"]["faithfulness"]["details"]["supported"]
    assert {
        "kind": "price",
        "text": "$219.50",
        "evidence": ["document chair-cirrus", "reference cirrus-price"],
    } in supported


def test_a_reference_is_evidence_on_its_own(tmp_path):
    dataset = tmp_path / "sale.yaml"
    dataset.write_text(
        "weights: {faithfulness: 1.0}\n"
        "cases:\n"
        "  - id: borealis-sale\n"
        "    input: What is the price of the Borealis floor lamp?\n"
        "    reference: This week the Borealis floor lamp is on sale for $129.00.\n"
    )
    out = tmp_path / "r.json"
    result = run(
        "score",
        traces("langchain-rag-openinference"),
        "--dataset",
        dataset,
        "--no-save",
        "--json",
        out,
    )
    assert result.exit_code == 0, result.output
    (case,) = json.loads(out.read_text())["cases"]
    assert case["scores"]["faithfulness"] == 1.0 and case["scores"]["value_grounding"] == 1.0
