"""Re-record one Python and one JavaScript framework end to end (real packages, the scripted
model, the real OTLP exporters) and check tracegrade reads the fresh recording exactly, so a
recipe that no longer works is seen. The environments are made by
``python3 tests/frameworks/record.py --prepare-only langgraph-openinference js-vercel-ai``
(``.ci/run`` does it); without them the tests skip, or fail with
``TRACEGRADE_REQUIRE_FRAMEWORKS=1``."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from benchmarks.frameworks import score_recording
from tests.frameworks import record

SETUPS = ["langgraph-openinference", "js-vercel-ai"]


def _ready(name: str) -> str | None:
    setup = record.load_setup(name)
    if setup["language"] == "python":
        requirements = record.HERE / setup["requirements"]
        venv = record.DEFAULT_VENVS / f"fw-{requirements.stem}"
        stamp = venv / record.STAMP
        if stamp.exists() and stamp.read_text() == record._stamp(requirements):
            return None
        return f"{venv} is missing or stale"
    if shutil.which("node") is None:
        return "node is not installed"
    project = record.HERE / setup["dir"]
    stamp = project / "node_modules" / record.STAMP
    lock = project / "package-lock.json"
    if stamp.exists() and stamp.read_text() == record.hashlib.sha256(lock.read_bytes()).hexdigest():
        return None
    return f"{project}/node_modules is missing or stale"


@pytest.mark.parametrize("name", SETUPS)
def test_a_fresh_recording_is_read_exactly(name, tmp_path):
    why = _ready(name)
    if why is not None:
        message = f"{why}: make it with python3 tests/frameworks/record.py --prepare-only {name}"
        if os.environ.get("TRACEGRADE_REQUIRE_FRAMEWORKS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    assert record.record(name, tmp_path, record.DEFAULT_VENVS)
    truth = json.loads((tmp_path / name / "truth.json").read_text())
    assert len(truth["turns"]) == 8
    assert all(t["driver_error"] is None and t["llm_calls"] >= 1 for t in truth["turns"])
    scored = score_recording(tmp_path / name)
    for field, score in scored.fields.items():
        assert score.applicable > 0 or field == "retrievals", field  # no retriever here
        assert score.failures == [], f"{name}: {field} inexact on {score.failures}"
