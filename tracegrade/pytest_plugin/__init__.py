"""tracegrade's pytest plugin (entry point ``pytest11``): keep agent evals in a test suite.

Mark a test with the golden dataset; it runs once per case (parametrised by case id), the agent
runs inside ``tracegrade.capture(case)`` (its spans and log records are recorded in memory,
under a case span carrying ``tracegrade.case_id``), and ``tracegrade.check(case)`` scores the
captured trace with tracegrade's scorers and fails the test with tracegrade's reasons::

    @pytest.mark.tracegrade(dataset="datasets/ecommerce/golden.yaml", tier="smoke")
    def test_shop_agent(tracegrade, tracegrade_case):
        with tracegrade.capture(tracegrade_case):
            answer(tracegrade_case.input)
        tracegrade.check(tracegrade_case)

Options: ``--tracegrade-baseline REF`` (``baseline``, ``latest``, a run id or a run-document JSON
file; stored runs are read from ``--tracegrade-db``): a case that regressed against its
baseline fails, and at the end of the session the whole run is compared (mean score,
hallucination rate, ...); a regression fails the session (exit 1).
``--tracegrade-json PATH`` writes the session's run document (one per dataset; the dataset
name joins the file name when there are several). The implementation
(:mod:`tracegrade.pytest_plugin.evals`) is imported only when a test uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import pytest
except ImportError as exc:  # only pytest loads this module, and it brings pytest
    raise ImportError(f"{__name__} runs inside pytest: pip install pytest") from exc

if TYPE_CHECKING:
    from tracegrade.dataset import Case
    from tracegrade.pytest_plugin.evals import CaseChecker, PytestRuns

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "tracegrade",
    "tracegrade_case",
]

MARKER = "tracegrade"
_RUNS = pytest.StashKey["PytestRuns"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracegrade", "tracegrade agent evals")
    group.addoption(
        "--tracegrade-baseline",
        metavar="REF",
        help="Compare each case and the session's run with this run (baseline, latest, a run id "
        "or a run-document JSON file); a regression fails.",
    )
    group.addoption("--tracegrade-db", metavar="PATH|URL", help="Store for --tracegrade-baseline.")
    group.addoption("--tracegrade-json", metavar="PATH", help="Write the session's run document.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(dataset, tier=None): run the test once per case of a golden dataset "
        "(fixture tracegrade_case).",
    )


def _runs(config: pytest.Config) -> PytestRuns:
    from tracegrade.pytest_plugin.evals import PytestRuns

    if _RUNS not in config.stash:
        config.stash[_RUNS] = PytestRuns(config)
    return config.stash[_RUNS]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None or "tracegrade_case" not in metafunc.fixturenames:
        return
    from tracegrade.pytest_plugin.evals import cases_of

    cases = cases_of(marker)
    metafunc.parametrize("tracegrade_case", cases, ids=[str(c.id) for c in cases])


@pytest.fixture
def tracegrade(request: pytest.FixtureRequest) -> CaseChecker:
    """Capture an agent's telemetry and check a golden case (see the module docstring)."""
    from tracegrade.pytest_plugin.evals import CaseChecker

    return CaseChecker(_runs(request.config), request)


@pytest.fixture
def tracegrade_case(request: pytest.FixtureRequest) -> Case:
    """The golden case of this parametrised test (``@pytest.mark.tracegrade(dataset=...)``)."""
    case: Case = request.param
    return case


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_RUNS, None)
    if state is None or not state.suites:
        return
    from tracegrade.pytest_plugin.evals import finish

    regression = finish(state, session.config.getoption("tracegrade_json"))
    if regression and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_RUNS, None)
    for warning in state.warnings if state else []:
        terminalreporter.write_line(f"tracegrade: warning: {warning}")
    for comparison in state.comparisons if state else []:
        verdict = "REGRESSION" if comparison.regression else "no regression"
        terminalreporter.section(f"tracegrade: {verdict} against {comparison.base.run_id}")
        for reason in comparison.reasons:
            terminalreporter.write_line(f"- {reason}")
        counts = ", ".join(f"{n} {s}" for s, n in comparison.counts().items() if n)
        terminalreporter.write_line(counts)
