"""``tracegrade run`` on the example shop agent (examples/ecommerce) and its golden dataset, with
the scripted model (tests/support/ecommerce_model.py) playing a good and two regressed models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runner.conftest import REPO, run_cli
from tests.support.ecommerce_model import shop_models

GOLDEN = str(REPO / "datasets" / "ecommerce" / "golden.yaml")
AGENT = "examples.ecommerce.agent:answer"


@pytest.fixture
def shop_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[callable]:
    with shop_models(monkeypatch) as start:
        yield start


def test_the_good_model_passes_the_smoke_tier(shop_model, tmp_path: Path) -> None:
    shop_model("good")
    ran = run_cli(tmp_path, GOLDEN, "--agent", AGENT, "--smoke", "--concurrency", "4")
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert ran.doc["summary"]["results"] >= 3 and ran.doc["summary"]["failed"] == 0


@pytest.mark.parametrize("variant", ["skip_tool", "invented_price"])
def test_a_regressed_model_fails_the_smoke_tier(shop_model, tmp_path: Path, variant: str) -> None:
    shop_model(variant)
    ran = run_cli(tmp_path, GOLDEN, "--agent", AGENT, "--smoke", "--concurrency", "4")
    assert ran.exit_code == 1, ran.stdout + ran.stderr
    assert ran.doc["summary"]["failed"] >= 1
