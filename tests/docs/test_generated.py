"""Issue 27: the generated parts of the docs are current. The frameworks table of
``docs/guides/frameworks.md`` is what ``benchmarks/frameworks.py --markdown`` prints from the
recordings (the command synopsis of ``docs/reference/cli.md`` is checked by
``tests/cli/test_reference.py``; the JSON Schemas are written at build time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_frameworks_table_is_what_the_benchmark_prints():
    done = subprocess.run(
        [sys.executable, "benchmarks/frameworks.py", "--markdown"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    page = (ROOT / "docs" / "guides" / "frameworks.md").read_text(encoding="utf-8")
    table = [line for line in page.splitlines() if line.startswith("|")]
    assert table == done.stdout.splitlines(), (
        "docs/guides/frameworks.md's table is stale: paste the output of "
        "`.venv/bin/python benchmarks/frameworks.py --markdown`"
    )
