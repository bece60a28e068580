"""Issue 35, the dashboard tells the regression story: the Runs page marks each dataset's
baseline; a run gated with ``--baseline`` says "regressed vs baseline (N cases)" and links to
that comparison; Compare takes ``baseline``, ``latest``, ``latest~N`` as ``tracegrade compare``
does and opens on baseline vs latest, its Base dropdown on the baseline.

A store of its own: the example shop agent run by ``tracegrade run`` with the scripted good
model (marked the baseline), then with the ``invented_price`` regression gated against it.
The demo in a real browser: tests/examples/test_demo.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from tests.web.shop import GOLDEN, _run
from tracegrade.cli import cli
from tracegrade.store import Store
from tracegrade.store.runs import gates
from tracegrade.web.app import create_app
from tracegrade.web.base import UiConfig


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """(store, baseline run, regressed run gated against it)."""
    root = tmp_path_factory.mktemp("gated")
    db = root / "gated.db"
    good = _run(db, "good", root / "good.json")
    marked = CliRunner().invoke(cli, ["runs", "baseline", good, "--db", str(db)])
    assert marked.exit_code == 0, marked.output
    gate = ("--baseline", "baseline")
    bad = _run(db, "invented_price", root / "bad.json", GOLDEN, *gate, label="regressed")
    return db, good, bad


@pytest.fixture
def client(gated: tuple[Path, str, str]) -> Iterator[TestClient]:
    app = create_app(UiConfig(db=str(gated[0])))
    with TestClient(app, base_url="http://localhost") as test_client:
        yield test_client
    app.state.ui.close()


def _row(html: str, run_id: str) -> str:
    match = re.search(rf'<tr class="[^"]*" data-run="{run_id}">(.*?)</tr>', html, re.S)
    assert match, f"no row for {run_id}"
    return match.group(0)


def test_the_gate_is_stored_beside_the_run(gated) -> None:
    db, good, bad = gated
    with Store(db) as store:
        found = gates(store, [good, bad])
    assert set(found) == {bad}
    gate = found[bad]
    assert gate.base_run_id == good and gate.base_is_baseline and gate.regression
    assert gate.regressed >= 1 and gate.reasons


def test_runs_marks_the_baseline_and_says_what_regressed(client, gated) -> None:
    _, good, bad = gated
    html = client.get("/runs").text
    baseline_row, regressed_row = _row(html, good), _row(html, bad)
    assert 'class="pass baseline"' in baseline_row and "badge baseline" in baseline_row
    assert "badge baseline" not in regressed_row
    link = re.search(r'<a class="gate fail" href="([^"]+)">([^<]+)</a>', regressed_row)
    assert link, regressed_row
    regressed = re.fullmatch(r"regressed vs baseline \((\d+) cases?\)", link.group(2))
    assert regressed and int(regressed.group(1)) >= 1
    assert link.group(1).replace("&amp;", "&") == f"/compare?base={good}&current={bad}"
    compared = client.get(link.group(1).replace("&amp;", "&")).text
    assert 'id="verdict" class="badge fail"' in compared
    assert compared.count('<tr class="status-regressed">') == int(regressed.group(1))


def _selected(html: str, side: str) -> str:
    select = re.search(rf'<select name="{side}">(.*?)</select>', html, re.S)
    assert select
    chosen = re.findall(r'<option value="([^"]+)" selected>', select.group(1))
    assert len(chosen) == 1, chosen
    return chosen[0]


def test_compare_opens_on_baseline_vs_latest(client, gated) -> None:
    _, good, bad = gated
    html = client.get("/compare").text
    assert _selected(html, "base") == good and _selected(html, "current") == bad
    assert f'<option value="{good}" selected>{good} (baseline)' in html
    assert 'id="verdict" class="badge fail"' in html
    assert '<th>Base <span class="badge baseline">baseline</span>' in html
    same = client.get("/compare", params={"base": "baseline", "current": "latest"}).text
    assert _selected(same, "base") == good and _selected(same, "current") == bad
    back = client.get("/compare", params={"base": "latest~1", "current": "latest"}).text
    assert _selected(back, "base") == good
    data = client.get("/compare.json", params={"base": "baseline"}).json()["comparison"]
    assert data["base"]["run_id"] == good and data["current"]["run_id"] == bad


def test_compare_names_a_reference_that_matches_nothing(client) -> None:
    html = client.get("/compare", params={"base": "latest~9"}).text
    error = re.search(r'<p class="error" id="compare-error">([^<]+)</p>', html)
    assert error and error.group(1).startswith("latest~9: only 2 stored run(s)")
    assert 'id="verdict"' not in html


def test_the_run_page_says_how_the_gate_went_and_compares_with_the_baseline_first(
    client, gated
) -> None:
    _, good, bad = gated
    html = client.get(f"/runs/{bad}").text
    gate = re.search(r'<p id="gate"><a class="gate fail" href="([^"]+)">([^<]+)</a>', html)
    assert gate and gate.group(2).startswith("regressed vs baseline (")
    assert gate.group(1).replace("&amp;", "&") == f"/compare?base={good}&current={bad}"
    select = re.search(r'<select name="base" id="compare-base">(.*?)</select>', html, re.S)
    assert select and re.findall(r'<option value="([^"]+)" selected>', select.group(1)) == [good]
    assert f"{good} (baseline)" in select.group(1)
    assert 'id="gate"' not in client.get(f"/runs/{good}").text  # the baseline was not gated
