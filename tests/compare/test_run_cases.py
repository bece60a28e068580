"""A comparison read from a temporary SQLite file (:class:`CaseTable`, what ``score --baseline``
and ``run --baseline`` use) is exactly the comparison of the documents in memory, while it
holds neither run's cases nor its own (:class:`ComparedCases`)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.compare.documents import case, run
from tracegrade.compare import RegressionRules, compare_runs, read_document
from tracegrade.compare.documents import DocumentStream
from tracegrade.compare.run_cases import CaseTable, ComparedCases, MemoryCases, document_head
from tracegrade.compare.runs import DiffCandidates, diff_trace_ids
from tracegrade.errors import InputError


def _runs(count: int, seed: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two runs of ``count`` case ids spanning several chunks: flips both ways, score moves,
    repeats (attempts), cases scored by several traces (entries far apart), new and removed."""
    rng = random.Random(seed)
    base_cases, current_cases = [], []
    for n in range(count):
        score = round(rng.random(), 3)
        moved = min(1.0, max(0.0, score + rng.choice([0, 0, 0, 0.3, -0.3])))
        extra = {"attempts": [score, moved, score]} if n % 97 == 0 else {}
        if n % 211 != 5:
            base_cases.append(case(f"c{n}", score, **extra))
        if n % 223 != 7:
            current_cases.append(case(f"c{n}", moved, **extra))
        if n % 50 == 3:  # the same case scored again by another trace, later in the run
            later = case(f"c{n}", round(rng.random(), 3), trace_id=f"again-{n}")
            current_cases.insert(rng.randrange(len(current_cases) + 1), later)
    for n in range(12):  # passed before, fail now: more than the verdict names
        base_cases.append(case(f"flip{n}", 0.9))
        current_cases.append(case(f"flip{n}", 0.1))
    return run("b", base_cases), run("c", current_cases, repeat=3)


def test_a_comparison_from_the_table_is_the_one_from_memory() -> None:
    base, current = _runs(1_300)
    rules = RegressionRules()
    expected = compare_runs(base, current, rules, base_is_baseline=True)
    with CaseTable() as table:
        old = table.add(base["cases"], document_head(base))
        new = table.add(iter(current["cases"]), document_head(current))
        got = compare_runs(old, new, rules, base_is_baseline=True)
        assert isinstance(got.cases, ComparedCases)
        assert got.to_json() == expected.to_json()
        assert diff_trace_ids(old, new, rules) == diff_trace_ids(base, current, rules)
    counts = expected.counts()
    assert counts["regressed"] and counts["improved"] and counts["new"] and counts["removed"]
    (flipped,) = [r for r in expected.reasons if "passed before and fail now" in r]
    assert int(flipped.split()[0]) > 12 and len(flipped.split(": ")[1].split(", ")) == 10


def test_groups_and_keys_match_the_document() -> None:
    base, _ = _runs(700)
    memory = MemoryCases(base)
    with CaseTable() as table:
        stored = table.add(base["cases"])
        keys = list(stored.keys())
        assert keys == list(memory.keys())
        assert stored.groups(keys[::3] + ["absent"]) == memory.groups(keys[::3] + ["absent"])
        probe = keys[::3] + ["absent"]
        assert stored.among(probe) == memory.among(probe) == set(keys[::3])


def test_diff_candidates_read_base_from_the_table() -> None:
    base, current = _runs(300)
    with CaseTable() as table:
        stored = DiffCandidates(table.add(base["cases"]))
        memory = DiffCandidates(base)
        for entry in current["cases"]:
            assert stored.wanted(entry) == memory.wanted(entry)


def test_scored_traces_are_noted_on_disk_and_readable_in_a_forked_worker() -> None:
    base, _ = _runs(50)
    with CaseTable() as table:
        stored = table.add(base["cases"])
        stored.note_scored("trace-c1")
        stored.note_scored("not-a-base-trace")
        assert stored.scored_among(["trace-c1", "trace-c2", "not-a-base-trace"]) == {"trace-c1"}
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: its own connection to the same file
            os.write(write, json.dumps(sorted(stored.groups(["c1", "c2"]))).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        assert json.loads(os.read(read, 1000)) == ["c1", "c2"]
        assert Path(table.path).exists()  # the worker left the file to its parent
    assert not Path(table.path).exists()


def test_compared_cases_index_slice_and_iterate() -> None:
    comparison = compare_runs(*_runs(40))
    spilled = ComparedCases()
    for item in comparison.cases:
        spilled.append(item)
    assert list(spilled) == list(comparison.cases) and len(spilled) == len(comparison.cases)
    assert spilled[-1] == comparison.cases[-1] and spilled[3:6] == list(comparison.cases[3:6])
    with pytest.raises(IndexError):
        spilled[len(spilled)]


@pytest.fixture
def document(tmp_path: Path) -> Path:
    base, _ = _runs(120)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(base, indent=2))
    return path


def test_a_streamed_document_is_the_document(document: Path) -> None:
    stream = DocumentStream(document)
    cases = list(stream.cases())
    whole = read_document(document)
    assert cases == whole["cases"]
    assert document_head(stream.head) == document_head(whole)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": "tracegrade.run/1", "run": {}, "cases": [', "not JSON"),
        ('{"schema_version": "other", "run": {}, "summary": {}, "cases": []}', "not a"),
        ('{"schema_version": "tracegrade.run/1", "run": {}, "cases": []}', "'summary'"),
        ('{"schema_version": "tracegrade.run/1", "cases": [1]}', "not an object"),
        ('{"cases": [{"passed": true}, {"score": 1}]}', "case 1: no 'passed' field"),
    ],
)
def test_a_bad_document_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as raised:
        list(DocumentStream(path).cases())
    assert str(path) in str(raised.value)


def test_a_bad_case_entry_streamed_into_the_table_is_named_with_its_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps({"cases": [{"case_id": "a", "passed": True}, {"case_id": "b", "passed": 2}]})
    )
    with CaseTable() as table, pytest.raises(InputError, match=r"cases\.1\.passed") as raised:
        table.add(DocumentStream(path).cases(), source=str(path))
    assert str(path) in str(raised.value)
