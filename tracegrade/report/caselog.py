"""The case entries of a run document kept on disk, not in memory, while a run streams.

A :class:`CaseLog` stands in for the document's ``cases`` list: entries are appended as
they are scored (one JSON line each, in a temporary file deleted when the log is closed or
the process ends) and read back in order by every consumer (the ``--json`` and ``--junit``
writers, the store, the console report, ``--baseline``), each iteration from the start.
Entries read back are what ``json.loads(json.dumps(entry))`` gives: what a stored run or a
``--json`` file gives a later reader.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any

__all__ = ["CaseLog"]


class CaseLog:
    """Run document case entries in a temporary file: :meth:`add`, then iterate (any
    number of times, each from the first entry) and ``len``."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="tracegrade-cases-")  # noqa: SIM115 (closed by close())
        self._count = 0

    def add(self, entry: Mapping[str, Any]) -> None:
        """Append one case entry (JSON-serialisable)."""
        self._file.write(json.dumps(entry).encode() + b"\n")
        self._count += 1

    def lines(self) -> Iterator[bytes]:
        """Each entry's JSON (one line, ``json.dumps`` of the entry, no newline), in order."""
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

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (json.loads(line) for line in self.lines())

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
