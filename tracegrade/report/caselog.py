"""The case entries of a run document as a run writes them: typed
(:class:`~tracegrade.run_document.CaseEntry`), each serialised once.

A :class:`CaseLog` keeps them on disk, not in memory, while a run streams: entries are appended
as they are scored (one JSON line each, in a temporary file deleted when the log is closed or
the process ends) and read back in order by every consumer (the ``--json`` and ``--junit``
writers, the store, the console report, ``--baseline``), each iteration from the start. A
:class:`CaseList` holds them in memory (a ``tracegrade run``, a pytest session). Both give the
entries typed (iteration) and as their JSON lines (:meth:`CaseLog.lines`: what the writers
write and the store keeps, never serialised again).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from types import TracebackType

from tracegrade.run_document import CaseEntry, entry_json

__all__ = ["CaseList", "CaseLog"]


class CaseLog:
    """Case entries in a temporary file: :meth:`add`, then iterate (any number of times, each
    from the first entry) and ``len``."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="tracegrade-cases-")  # noqa: SIM115 (closed by close())
        self._count = 0

    def add(self, entry: CaseEntry) -> None:
        """Append one case entry."""
        self.add_line(entry_json(entry))

    def add_line(self, line: bytes) -> None:
        """Append one case entry as its JSON line (one :func:`entry_json` wrote, or a copy of
        one with strings changed: redacted)."""
        self._file.write(line + b"\n")
        self._count += 1

    def lines(self) -> Iterator[bytes]:
        """Each entry's JSON (one line, no newline), in order."""
        self._file.flush()
        position = 0
        while True:
            self._file.seek(position)
            chunk = self._file.readlines(1 << 20)
            if not chunk:
                return
            position = self._file.tell()
            for line in chunk:
                yield line.rstrip(b"\n")

    def __iter__(self) -> Iterator[CaseEntry]:
        return (CaseEntry.model_validate_json(line) for line in self.lines())

    def __len__(self) -> int:
        return self._count

    def close(self) -> None:
        """Delete the file (the log is empty afterwards)."""
        self._file.close()

    def __enter__(self) -> CaseLog:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class CaseList:
    """Case entries held in memory, with the same reading interface as a :class:`CaseLog`."""

    def __init__(self, entries: Iterable[CaseEntry] = ()) -> None:
        self._entries = tuple(entries)

    def lines(self) -> Iterator[bytes]:
        """Each entry's JSON (one line), in order."""
        return (entry_json(entry) for entry in self._entries)

    def __iter__(self) -> Iterator[CaseEntry]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
