"""The pytest plugin (entry point ``pytest11``), run with ``pytester``: a test marked with the
shop's golden dataset runs once per case, the agent's telemetry is captured in memory and the case
is scored by tracegrade; failures carry tracegrade's reasons; ``--tracegrade-baseline`` fails
cases (and the session) that regressed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.compare.conftest import GOLDEN
from tests.support.ecommerce_model import ecommerce_model
from tests.support.openai_server import ScriptedOpenAI

# Imported here so pytester's in-process runs find numpy and scipy already loaded (it drops the
# modules an inner run imported, and numpy cannot be loaded twice in one process).
import tracegrade.pytest_plugin.evals  # noqa: F401,E402  isort: skip

pytest_plugins = ["pytester"]

DOCS_PAGE = Path(__file__).parents[2] / "docs" / "getting-started" / "pytest-plugin.md"
DOCS_DATASET = 'dataset="datasets/ecommerce/golden.yaml"'


def _test_file(dataset: str) -> str:
    """The docs' pytest example (``docs/getting-started/pytest-plugin.md``) as written, with
    ``dataset`` for the golden dataset: the page's example runs here, on the scripted model."""
    page = DOCS_PAGE.read_text(encoding="utf-8")
    example = re.search(r"```python file=test_shop_agent.py\n(.*?)```", page, re.DOTALL)
    assert example and DOCS_DATASET in example.group(1), f"{DOCS_PAGE}: no pytest example"
    return example.group(1).replace(DOCS_DATASET, f"dataset={dataset!r}")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    servers: list[ScriptedOpenAI] = []

    def use(variant: str) -> None:
        for running in servers:
            running.stop()
        servers[:] = [ScriptedOpenAI(ecommerce_model(variant)).start()]  # type: ignore[arg-type]
        monkeypatch.setenv("OPENAI_BASE_URL", servers[0].base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")

    yield use
    for running in servers:
        running.stop()


def _suite(pytester: pytest.Pytester, threshold: float | None = None) -> None:
    dataset = GOLDEN
    if threshold is not None:
        data = yaml.safe_load(Path(GOLDEN).read_text())
        data["threshold"] = threshold
        dataset = str(pytester.path / "golden.yaml")
        Path(dataset).write_text(yaml.safe_dump(data, sort_keys=False))
    pytester.makepyfile(test_shop=_test_file(dataset))


def test_each_case_is_a_test_and_the_good_model_passes(pytester, model) -> None:
    model("good")
    _suite(pytester)
    result = pytester.runpytest_inprocess("-v", "--tracegrade-json", "run.json")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*test_shop_agent[[]headphones-under-300[]] PASSED*"])
    doc = json.loads((pytester.path / "run.json").read_text())
    assert doc["summary"]["results"] == 5 and doc["summary"]["score"] == 1.0
    # issue 27, defect 12: tracegrade's own code warned on every test (InMemoryLogExporter)
    result.stdout.no_fnmatch_line("*tracegrade/*Warning*")


def test_a_failing_case_fails_with_tracegrades_reasons(pytester, model) -> None:
    model("skip_tool")
    _suite(pytester)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(
        ["*tracegrade: case headphones-under-300: score *required call search_products not made*"]
    )


def test_a_baseline_fails_regressed_cases_and_the_session(pytester, model) -> None:
    model("good")
    _suite(pytester, threshold=0.5)  # invented prices still pass at 0.5, but score lower
    pytester.runpytest_inprocess("--tracegrade-json", "base.json").assert_outcomes(passed=5)
    model("invented_price")
    alone = pytester.runpytest_inprocess()
    alone.assert_outcomes(passed=5)
    gated = pytester.runpytest_inprocess("--tracegrade-baseline", "base.json")
    gated.assert_outcomes(passed=1, failed=4)
    gated.stdout.fnmatch_lines(
        [
            "*case recent-orders: regressed against baseline *: score 1.00 -> 0.77*",
            "*tracegrade: REGRESSION against *",
            "*hallucination rate 0.0% -> 80.0%*",
        ]
    )
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
