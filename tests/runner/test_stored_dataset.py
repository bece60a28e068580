"""Datasets kept in the store (created in the dashboard's case editor) are first-class:
``run store:NAME``, ``score --dataset store:NAME``, ``runs`` / ``history`` / ``compare
--dataset store:NAME``, and exported as YAML by ``dataset export`` and the editor's link
(issue 27, defect 1: they used to fail with "File ... does not exist")."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner
from starlette.testclient import TestClient

from tests.runner.conftest import run_cli
from tests.support.web_forms import csrf_token, form_fields
from tracegrade.cli import cli
from tracegrade.dataset import load_dataset
from tracegrade.web import UiConfig, create_app

SHOP = "tests.runner.shop_agent:answer"


def _created_in_the_editor(db: Path) -> str:
    """A stored dataset ``team`` with two cases, made through the dashboard; its export."""
    app = create_app(UiConfig(db=str(db)))
    with TestClient(app, base_url="http://localhost") as client:
        page = client.get("/datasets").text
        client.post("/datasets", data={"csrf_token": csrf_token(page), "name": "team"})
        for case_id, product in (("sony", "Sony WH-1000XM5"), ("bose", "Bose QC Ultra")):
            form = form_fields(client, "/datasets/store:team/cases/new")
            form.update(
                id=case_id, input=f"How much is the {product}?", expected_tool=["get_price"]
            )
            assert client.post("/datasets/store:team/cases/new", data=form).status_code == 200
        page = client.get("/datasets/store:team").text
        assert 'id="export-yaml" href="/datasets/store:team/export.yaml"' in page
        exported = client.get("/datasets/store:team/export.yaml")
    app.state.ui.close()
    assert exported.status_code == 200
    assert exported.headers["content-disposition"] == 'attachment; filename="team.yaml"'
    return exported.text


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_a_dataset_made_in_the_editor_runs_scores_compares_and_exports(
    model, tmp_path: Path
) -> None:
    db = tmp_path / "team.db"
    from_ui = _created_in_the_editor(db)
    first = run_cli(tmp_path, "store:team", "--agent", SHOP, "--db", str(db), "--label", "v1")
    assert first.exit_code == 0, first.stdout + first.stderr
    assert first.doc["run"]["dataset"]["name"] == "team"
    assert first.doc["run"]["dataset"]["source"] == "store:team"
    assert [c["case_id"] for c in first.doc["cases"]] == ["sony", "bose"]
    second = run_cli(tmp_path, "store:team", "--agent", SHOP, "--db", str(db), "--label", "v2")
    assert second.exit_code == 0 and second.doc["run"]["dataset"] == first.doc["run"]["dataset"]

    traces = tmp_path / "traces.jsonl"  # both runs' traces, scored again from a file
    assert _invoke("export", str(traces), "--db", str(db))[0] == 0
    code, output = _invoke("score", str(traces), "--dataset", "store:team", "--db", str(db))
    assert code == 0 and "passed 4/4" in output, output

    code, output = _invoke("runs", "--dataset", "store:team", "--json", "--db", str(db))
    listed = [json.loads(line) for line in output.splitlines()]
    assert code == 0 and len(listed) == 3 and {r["dataset"] for r in listed} == {"team"}
    code, output = _invoke("history", "store:team", "--db", str(db))
    assert code == 0 and "history of team" in output and "v1" in output and "v2" in output
    compared = ("compare", "latest~2", "latest", "--dataset", "store:team", "--db", str(db))
    code, output = _invoke(*compared)
    assert code == 0 and "no regression" in output, output

    out = tmp_path / "team.yaml"
    code, output = _invoke("dataset", "export", "team", "--out", str(out), "--db", str(db))
    assert code == 0, output
    assert out.read_text() == from_ui and yaml.safe_load(from_ui)["name"] == "team"
    assert [c.id for c in load_dataset(out).cases] == ["sony", "bose"]
    assert _invoke("dataset", "export", "team", "--out", str(out), "--db", str(db))[0] == 2
    assert _invoke("dataset", "export", "store:team", "--db", str(db)) == (0, from_ui)


def test_an_unknown_stored_dataset_names_the_stored_ones(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    _created_in_the_editor(db)
    ran = run_cli(tmp_path, "store:teem", "--agent", SHOP, "--db", str(db))
    assert ran.exit_code == 2
    assert "no dataset 'teem' stored in" in ran.stderr and "(stored datasets: team)" in ran.stderr
    code, output = _invoke("dataset", "export", "teem", "--db", str(db))
    assert code == 2 and "(stored datasets: team)" in output
