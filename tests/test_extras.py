"""The lean core (issue 35): the dashboard, PostgreSQL, charts and statistics are extras; a
command whose extra is missing exits 2 naming its ``pip install`` line, and what the base
install does (score, compare single runs) works without them.

Each check runs ``tracegrade`` in a subprocess whose interpreter cannot import the extra's
libraries (``sys.modules[name] = None`` makes ``import name`` raise ModuleNotFoundError, as
on an install without them). The wheel in a fresh virtualenv: tests/packaging/."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tracegrade._util.extras import EXTRA_OF
from tracegrade.store import Store

ROOT = Path(__file__).resolve().parents[1]
OTLP = ROOT / "datasets" / "tau-bench-otlp" / "openinference" / "traces.jsonl.gz"


def tracegrade(blocked: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "from tracegrade.cli import main\n"
        f"sys.argv = ['tracegrade', *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_every_extra_module_belongs_to_a_declared_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(EXTRA_OF.values()) <= set(extras)
    assert set(extras["all"][0].split("[")[1].rstrip("]").split(",")) == set(EXTRA_OF.values())


@pytest.mark.parametrize(
    ("blocked", "args", "extra"),
    [
        (["jinja2"], ["ui", "--db", "x.db"], "ui"),
        (["argon2"], ["users", "list", "--db", "x.db"], "ui"),
        (["matplotlib"], ["history", "--png", "h.png", "--db", "x.db"], "charts"),
        (["psycopg"], ["runs", "--db", "postgresql://u@127.0.0.1:1/none"], "postgres"),
    ],
)
def test_a_command_without_its_extra_exits_2_naming_the_pip_line(tmp_path, blocked, args, extra):
    if extra == "charts":  # history needs a stored run to draw
        done = tracegrade([], "score", str(OTLP), "--db", "x.db", cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr
    elif extra == "ui":  # ui only reads a store: it must exist
        Store(tmp_path / "x.db").close()
    done = tracegrade(blocked, *args, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"pip install 'tracegrade[{extra}]'" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_compare_works_without_stats_and_repeats_need_it(tmp_path):
    """Single-attempt runs compare without scipy (no paired test is needed to decide); runs
    with repeats need the Wilcoxon tests, and say which extra has them."""
    stats = ["numpy", "scipy", "statsmodels"]
    for _ in range(2):
        done = tracegrade([], "score", str(OTLP), "--db", "x.db", cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr
    done = tracegrade(stats, "compare", "latest~1", "latest", "--db", "x.db", cwd=tmp_path)
    assert done.returncode == 0, (done.stdout, done.stderr)
    single = tmp_path / "single.json"
    repeated = tmp_path / "repeated.json"
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tracegrade", "runs", "show", "latest", "--db", "x.db"]
            + ["--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    single.write_text(json.dumps(doc))
    doc["cases"] = [c for case in doc["cases"][:5] for c in (case, case)]  # two attempts each
    repeated.write_text(json.dumps(doc))
    done = tracegrade(stats, "compare", str(repeated), str(repeated), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "pip install 'tracegrade[stats]'" in done.stderr


def test_an_extra_missing_in_the_library_raises_the_named_error(monkeypatch):
    from tracegrade._util.extras import MissingExtraError, import_extra

    for name in ("statsmodels", "statsmodels.stats", "statsmodels.stats.inter_rater"):
        monkeypatch.setitem(sys.modules, name, None)  # as if never installed, even if imported
    with pytest.raises(MissingExtraError, match=r"pip install 'tracegrade\[stats\]'"):
        import_extra("statsmodels.stats.inter_rater", "Cohen's kappa")
