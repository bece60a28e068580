"""Where a comparison reads each run's cases (:class:`RunCases`): a run document's case list
held in memory (:class:`MemoryCases`), or a temporary SQLite file (:class:`CaseTable`) that a
run of any size is streamed into, for ``score --baseline`` and ``run --baseline``.

Either way a case is held as its *compared entry* (:func:`compared_document`: the fields the
comparison reads, a few hundred bytes instead of a few KB), and cases are handed out grouped
with their attempts (:class:`~tracegrade.compare.overviews.CaseGroup`), a chunk of case keys
at a time, so a comparison over a :class:`CaseTable` holds one chunk of cases, whatever the
runs' sizes.
"""

from __future__ import annotations

import itertools
import os
import pickle
import shutil
import sqlite3
import tempfile
import weakref
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, overload

import orjson

from tracegrade.compare.model import CaseComparison
from tracegrade.compare.overviews import CaseGroup, case_group, case_key, group_entries
from tracegrade.run_document import CaseEntry, read_case

__all__ = [
    "RunCases",
    "CaseTable",
    "ComparedCases",
    "MemoryCases",
    "TableCases",
    "as_run_cases",
    "compared_document",
    "compared_entry",
]

_READ = (
    "case_id",
    "trace_id",
    "passed",
    "score",
    "flaky",
    "attempts",
    "scores",
    "axes",
    "reasons",
    "usage",
)
"""The keys of a case entry the comparison reads (and of ``details``, :data:`_READ_DETAILS`)."""

_READ_DETAILS = (("hallucination", "forbidden_found"), ("value_grounding", "ungrounded"))
"""(scorer, key) of the ``details`` the comparison reads (the hallucination test, the diff)."""

CHUNK_KEYS = 500
"""Case keys looked up at once (the per-case tests are vectorised over a chunk)."""


def compared_entry(case: CaseEntry | Mapping[str, Any]) -> dict[str, Any]:
    """A run document's case entry (typed, or its JSON-ready data) with only what a
    comparison reads (:data:`_READ`, and of its ``details`` only :data:`_READ_DETAILS`)."""
    if isinstance(case, CaseEntry):
        case = case.model_dump(include={*_READ, "details"}, exclude_unset=True)
    details = case.get("details") or {}
    found = {
        scorer: {"details": {key: value}}
        for scorer, key in _READ_DETAILS
        if (value := ((details.get(scorer) or {}).get("details") or {}).get(key))
    }
    return {**{key: case[key] for key in _READ if key in case}, "details": found}


def compared_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` (a run document) with only what a comparison reads of its cases
    (:func:`compared_entry`), for the same comparison. The cases are read once (a
    :class:`~tracegrade.report.caselog.CaseLog` is read through, not held)."""
    return {**doc, "cases": [compared_entry(case) for case in doc.get("cases") or []]}


def document_head(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A run document without its cases (``run``, ``summary``, ...)."""
    return {key: value for key, value in doc.items() if key != "cases"}


class RunCases(Protocol):
    """One run's cases, as a comparison reads them."""

    @property
    def head(self) -> Mapping[str, Any]:
        """The run document without its cases."""
        ...

    def keys(self) -> Iterator[str]:
        """Each case key once, in document order (first entry of each case)."""
        ...

    def groups(self, keys: Iterable[str]) -> dict[str, CaseGroup]:
        """The groups of those of ``keys`` this run has (the others are left out)."""
        ...

    def among(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` this run has (without reading their cases)."""
        ...

    def note_scored(self, trace_id: str) -> None:
        """Remember that another run scored ``trace_id``, when it is one of this run's."""
        ...

    def scored_among(self, trace_ids: Iterable[str]) -> set[str]:
        """Those of ``trace_ids`` :meth:`note_scored` remembered."""
        ...


class MemoryCases:
    """A :class:`RunCases` over a run document in memory (its compared entries grouped)."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.head = document_head(doc)
        self._groups = group_entries(compared_entry(case) for case in doc.get("cases") or [])
        self._trace_ids: set[str] | None = None
        self._scored: set[str] = set()

    def keys(self) -> Iterator[str]:
        return iter(list(self._groups))

    def groups(self, keys: Iterable[str]) -> dict[str, CaseGroup]:
        return {key: self._groups[key] for key in keys if key in self._groups}

    def among(self, keys: Iterable[str]) -> set[str]:
        return {key for key in keys if key in self._groups}

    def note_scored(self, trace_id: str) -> None:
        if self._trace_ids is None:
            self._trace_ids = {str(t) for g in self._groups.values() if (t := g.entry.trace_id)}
        if trace_id in self._trace_ids:
            self._scored.add(trace_id)

    def scored_among(self, trace_ids: Iterable[str]) -> set[str]:
        return self._scored.intersection(trace_ids)


def as_run_cases(run: Mapping[str, Any] | RunCases) -> RunCases:
    """``run`` as a :class:`RunCases`: a run document (``cases`` read once) or a source."""
    if isinstance(run, Mapping):
        return MemoryCases(run)
    return run


class CaseTable:
    """A temporary SQLite file holding the compared entries of one or more runs, read back a
    chunk of cases at a time (:class:`TableCases`). Use as a context manager (or :meth:`close`):
    the file is deleted on closing. Readable from forked worker processes (each opens its own
    connection)."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="tracegrade-compare-")
        self.path = os.path.join(self._dir, "cases.db")
        self._owner = os.getpid()
        self._pid = 0
        self._conn: sqlite3.Connection | None = None
        self._runs = 0
        weakref.finalize(self, _remove, self._dir, self._owner)
        self.connection().executescript(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
            "CREATE TABLE cases (run INTEGER, key TEXT, position INTEGER, trace_id TEXT,"
            " entry BLOB);"
            "CREATE TABLE scored (run INTEGER, trace_id TEXT, PRIMARY KEY (run, trace_id));"
            "CREATE INDEX cases_key ON cases (run, key, position);"
            "CREATE INDEX cases_trace ON cases (run, trace_id);"
        )

    def connection(self) -> sqlite3.Connection:
        """This process's connection to the file."""
        if self._conn is None or self._pid != os.getpid():
            self._conn = sqlite3.connect(self.path, isolation_level=None)
            self._pid = os.getpid()
        return self._conn

    def add(
        self,
        cases: Iterable[Mapping[str, Any]],
        head: Mapping[str, Any] | None = None,
        source: str = "run document",
    ) -> TableCases:
        """Store a run: its case entries (read once, a thousand at a time) and ``head`` (its
        document without cases); returns the run as a :class:`RunCases`. ``source`` names
        the run in errors (a file path, say).

        Raises:
            InputError: an entry is not a case entry (see :meth:`TableCases.extend`).
        """
        run, self._runs = self._runs, self._runs + 1
        added = TableCases(self, run, dict(head or {}), source)
        added.extend(cases)
        return added

    def close(self) -> None:
        """Close the connection and delete the file (in the process that made it)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        _remove(self._dir, self._owner)

    def __enter__(self) -> CaseTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remove(directory: str, owner: int) -> None:
    """Delete a :class:`CaseTable`'s directory, only in the process that made it (a forked
    worker leaves it to its parent)."""
    if os.getpid() == owner:
        shutil.rmtree(directory, ignore_errors=True)


class TableCases:
    """One run of a :class:`CaseTable`, as a :class:`RunCases`."""

    def __init__(
        self, table: CaseTable, run: int, head: Mapping[str, Any], source: str = "run document"
    ) -> None:
        self.table = table
        self.run = run
        self.head = head
        self.source = source
        """What the run is called in errors."""
        self.count = 0
        """Case entries stored."""

    def extend(self, cases: Iterable[Mapping[str, Any]]) -> None:
        """Store more case entries of this run (after those stored), a thousand at a time.

        Raises:
            InputError: an entry is not a case entry (named by its position and field).
        """
        conn = self.table.connection()
        rows: list[tuple[int, str, int, str | None, bytes]] = []
        insert = "INSERT INTO cases VALUES (?, ?, ?, ?, ?)"
        for case in cases:
            entry = compared_entry(case)
            typed = read_case(entry, self.source, self.count)  # named as it comes
            trace_id = typed.trace_id
            rows.append((self.run, case_key(typed), self.count, trace_id, orjson.dumps(entry)))
            self.count += 1
            if len(rows) >= 1000:
                conn.executemany(insert, rows)
                rows.clear()
        conn.executemany(insert, rows)

    def keys(self) -> Iterator[str]:
        cursor = self.table.connection().execute(
            "SELECT key FROM cases WHERE run = ? GROUP BY key ORDER BY MIN(position)",
            (self.run,),
        )
        while rows := cursor.fetchmany(CHUNK_KEYS):
            yield from (row[0] for row in rows)

    def groups(self, keys: Iterable[str]) -> dict[str, CaseGroup]:
        found: dict[str, list[CaseEntry]] = {}
        for chunk in chunks(keys):
            marks = ",".join("?" * len(chunk))
            rows = self.table.connection().execute(
                f"SELECT key, entry FROM cases WHERE run = ? AND key IN ({marks})"
                " ORDER BY position",
                (self.run, *chunk),
            )
            for key, entry in rows:
                found.setdefault(key, []).append(CaseEntry.model_validate_json(entry))
        return {key: case_group(key, entries) for key, entries in found.items()}

    def among(self, keys: Iterable[str]) -> set[str]:
        return self._found("SELECT DISTINCT key FROM cases WHERE run = ? AND key", keys)

    def note_scored(self, trace_id: str) -> None:
        self.table.connection().execute(
            "INSERT OR IGNORE INTO scored SELECT run, trace_id FROM cases"
            " WHERE run = ? AND trace_id = ? LIMIT 1",
            (self.run, trace_id),
        )

    def scored_among(self, trace_ids: Iterable[str]) -> set[str]:
        return self._found("SELECT trace_id FROM scored WHERE run = ? AND trace_id", trace_ids)

    def _found(self, select: str, values: Iterable[str]) -> set[str]:
        """The first column of ``select ... IN (values)`` (``run = ?`` this run), a chunk of
        values at a time."""
        found: set[str] = set()
        for chunk in chunks(values):
            marks = ",".join("?" * len(chunk))
            rows = self.table.connection().execute(f"{select} IN ({marks})", (self.run, *chunk))
            found.update(row[0] for row in rows)
        return found


def chunks(items: Iterable[str], size: int = CHUNK_KEYS) -> Iterator[Sequence[str]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


class ComparedCases(Sequence[CaseComparison]):
    """Case comparisons kept in a temporary file (pickled one at a time) and read back on
    demand, in order: a comparison of any size holds 8 bytes a case (its offset) in memory.
    Appended to while the comparison runs, read only afterwards."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the sequence)
        self._offsets = array("q")
        self._end = 0
        self._flushed = True

    def append(self, case: CaseComparison) -> None:
        """Add ``case`` at the end."""
        data = pickle.dumps(case, protocol=pickle.HIGHEST_PROTOCOL)
        self._offsets.append(self._end)
        self._file.write(data)
        self._end += len(data)
        self._flushed = False

    def _read(self, index: int) -> CaseComparison:
        if not self._flushed:
            self._file.flush()
            self._flushed = True
        start = self._offsets[index]
        end = self._offsets[index + 1] if index + 1 < len(self._offsets) else self._end
        case: CaseComparison = pickle.loads(os.pread(self._file.fileno(), end - start, start))
        return case

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> CaseComparison: ...

    @overload
    def __getitem__(self, index: slice) -> list[CaseComparison]: ...

    def __getitem__(self, index: int | slice) -> CaseComparison | list[CaseComparison]:
        if isinstance(index, slice):
            return [self._read(i) for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self._read(index % len(self))

    def __iter__(self) -> Iterator[CaseComparison]:
        return (self._read(i) for i in range(len(self)))
