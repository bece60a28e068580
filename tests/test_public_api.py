"""The public API (issue 11 item 4): every name in ``tracegrade.__all__`` resolves, importing
``tracegrade`` loads none of the heavy modules, and the Python API page's example runs (moved
from the README to ``docs/reference/python-api.md`` by issue 27)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tracegrade

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves():
    for name in tracegrade.__all__:
        assert getattr(tracegrade, name) is not None, name


def test_import_is_lazy():
    code = (
        "import sys, tracegrade; "
        "print(sorted(m for m in sys.modules if m.startswith('tracegrade')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['tracegrade', 'tracegrade.version']"  # the version only


def test_the_python_api_page_example_runs(tmp_path, monkeypatch):
    page = ROOT / "docs" / "reference" / "python-api.md"
    example = re.search(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
    assert example, f"{page} has no python example"
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    exec(compile(example.group(1), str(page), "exec"), namespace)
    run = namespace["run"]
    assert isinstance(run, tracegrade.RunResult)
    assert run.summary.results == 25 and 0 <= run.summary.pass_rate <= 1


def test_the_python_api_page_documents_public_names_only():
    """Issue 39 item 4: the API reference documents names of ``tracegrade.__all__`` (and the
    scorer plugins' registry module), never an internal module's path; it names no
    ``tracegrade.pipeline`` function."""
    page = (ROOT / "docs" / "reference" / "python-api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\.\. auto(?:function|class|module):: (\S+)", page, re.MULTILINE)
    assert documented
    internal = [
        name
        for name in documented
        if name != "tracegrade.scoring.registry"
        and not (name.startswith("tracegrade.") and name.split(".", 1)[1] in tracegrade.__all__)
    ]
    assert internal == []
    assert "tracegrade.pipeline" not in page
