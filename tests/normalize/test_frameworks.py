"""Issue 23: real agent frameworks, read exactly.

Each recording in ``tests/data/frameworks/<setup>/`` was made by running a real, current
framework (``tests/frameworks/record.py``) against the scripted model; its ``truth.json`` says
what the model and the tools really did. Every field tracegrade derives (tool calls and
arguments in order, results, final answer, user inputs, history, tokens, LLM calls,
conversation grouping) must be exact on every turn where the framework's spans carry it
(``benchmarks/frameworks.py`` prints the same comparison as a table).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.frameworks import FIELDS, reader_pending, recordings, score_recording

SETUPS = recordings(())


@pytest.fixture(scope="module", params=SETUPS, ids=[p.name for p in SETUPS])
def scored(request: pytest.FixtureRequest):
    return score_recording(request.param)


def test_every_setup_was_recorded_with_every_scenario():
    assert len(SETUPS) >= 2
    for path in SETUPS:
        assert (path / "truth.json").exists(), path


@pytest.mark.parametrize("field", FIELDS)
def test_field_is_exact_on_every_turn(scored, field):
    score = scored.fields[field]
    pending = reader_pending(scored.setup)
    if pending and score.failures:
        pytest.xfail(f"{scored.setup}: reader pending ({pending}): {score.failures[:3]}")
    assert score.failures == [], f"{scored.setup}: {field} inexact on {score.failures}"


def test_every_turn_has_its_trace(scored):
    if reader_pending(scored.setup) and scored.traces < scored.turns:
        pytest.xfail(f"{scored.setup}: reader pending")
    assert scored.traces >= scored.turns, (scored.setup, scored.traces, scored.turns)


def test_recordings_are_not_empty():
    for path in SETUPS:
        assert any(Path(path).glob("traces.*")), path


@pytest.mark.parametrize("path", SETUPS, ids=[p.name for p in SETUPS])
def test_nothing_read_exactly_is_reported_as_unread_content(path):
    """Issue 34: content the reader reads (by a map or by its shape) is never "unread" in lint:
    the unread-content finding is kept for what no reading reaches."""
    from tracegrade.pipeline.reading import from_files

    files = sorted(p for p in path.iterdir() if p.name.startswith("traces."))
    unread = [t.gap("unread_content") for t in from_files(files).traces]
    assert [g.reason for g in unread if g is not None] == []
