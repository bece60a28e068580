"""The wheel ships every subpackage: pyproject.toml lists packages explicitly (``config/`` is
mapped to ``tracegrade.defaults``), and an editable install would hide a forgotten one."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "tracegrade").rglob("__init__.py")
    }
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - found == {"tracegrade.defaults"}
