"""The run page shows what a ``--repeat`` run spent besides one attempt per case (issue 27,
defect 9): a stored run document in a real store, the page read through the app."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from starlette.testclient import TestClient

from tracegrade.store.runs import save_run
from tracegrade.store.traces import Store
from tracegrade.web import UiConfig, create_app

DOC = json.loads((Path(__file__).parent / "run_document.json").read_text())


def _page(db: Path, doc: dict) -> str:
    with Store(db) as store:
        save_run(store, doc)
    app = create_app(UiConfig(db=str(db)))
    with TestClient(app, base_url="http://localhost") as client:
        page = client.get(f"/runs/{doc['run']['run_id']}")
    app.state.ui.close()
    assert page.status_code == 200
    return page.text


def test_a_repeated_run_shows_what_every_attempt_spent(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["run"].update(run_id="20261124-000000-spent1", repeat=3)
    spent = {"attempts": 6, "input_tokens": 7777, "output_tokens": 888, "cost_usd": 0.0123}
    doc["summary"]["spent"] = spent
    html = _page(tmp_path / "s.db", doc)
    row = html[html.index('id="spent"') :].split("</tr>")[0]
    assert "6 attempts" in row and "7777" in row and "888" in row and "$0.0123" in row
    assert "one attempt per case" in html


def test_a_single_attempt_run_has_no_spent_row(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["summary"]["spent"] = {"attempts": 2, "input_tokens": 1, "output_tokens": 1}
    assert 'id="spent"' not in _page(tmp_path / "s.db", doc)
