"""Issue 39: writing the run document through its models changes no byte of it. ``score
--json`` on the README's main job (against its golden dataset, and its tour's reference-free
score) and ``run --json`` on the demo's runs (the agent in process and as a command, the
regressed model gated against a baseline) give the documents kept in
tests/data/reference_documents/, made by the writer before the change (ids, times, durations
and temporary paths masked: :mod:`tests.support.reference_documents`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.reference_documents import MAKERS, REFERENCES, text


@pytest.mark.parametrize("command", sorted(MAKERS))
def test_the_commands_write_the_reference_documents(command: str, tmp_path: Path) -> None:
    made = MAKERS[command](tmp_path)
    assert made, command
    for name, document in made.items():
        reference = (REFERENCES / f"{name}.json").read_text(encoding="utf-8")
        assert text(document) == reference, (
            f"{name}: the document differs from tests/data/reference_documents/{name}.json; "
            "if the change is meant (a scorer's details, say), re-make the references with "
            "python -m tests.support.reference_documents --write"
        )


def test_masking_keeps_what_the_input_decides() -> None:
    from tests.support.reference_documents import MASK, mask

    document = {
        "run": {"run_id": "20260101-x", "label": "v1", "started_at": "2026-01-01T00:00:00Z"},
        "summary": {"runner": {"wall_s": 3.2, "attempts": 5}, "pass_rate": 0.5},
        "cases": [{"trace_id": "ab", "usage": {"duration_ms": 12.0, "input_tokens": 40}}],
    }
    assert mask(document) == {
        "run": {"run_id": MASK, "label": "v1", "started_at": MASK},
        "summary": {"runner": {"wall_s": MASK, "attempts": 5}, "pass_rate": 0.5},
        "cases": [{"trace_id": MASK, "usage": {"duration_ms": MASK, "input_tokens": 40}}],
    }
