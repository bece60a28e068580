"""Run documents from files: the ``--json`` output of ``tracegrade score`` and ``run``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson

from tracegrade.errors import InputError
from tracegrade.run_document import RunDocument

RUN_SCHEMA = "tracegrade.run/1"


def read_document(path: str | Path) -> dict[str, Any]:
    """A ``tracegrade.run/1`` document read from ``path``.

    Raises:
        InputError: the file cannot be read, is not JSON, or is not a run document (the
            message names the file and what is missing).
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", source=str(path), line=exc.lineno) from exc
    return _check(doc, path)


def _check(doc: Any, path: str | Path) -> dict[str, Any]:
    """``doc`` when it is a run document, else an InputError naming ``path``."""
    if not isinstance(doc, dict) or doc.get("schema_version") != RUN_SCHEMA:
        raise InputError(
            f"not a {RUN_SCHEMA} document (write one with `tracegrade score --json PATH`)",
            source=str(path),
        )
    for key in ("run", "summary", "cases"):
        if key not in doc:
            raise InputError(f"run document without {key!r}", source=str(path))
    RunDocument.from_json(doc, source=str(path))  # typed at the edge: a bad field is named
    return doc


class DocumentStream:
    """A run document file read as a stream (``ijson``, one pass): :meth:`cases` yields its case
    entries one at a time, and :attr:`head` (the document without ``cases``) is complete once
    they have all been read. Holds one case entry at a time, whatever the file's size."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.head: dict[str, Any] = {}

    def cases(self) -> Iterator[dict[str, Any]]:
        """The case entries, in order; then checks the head as :func:`read_document` does.

        Raises:
            InputError: the file cannot be read, is not JSON, or is not a run document (a
                case that is not an object or has no ``passed`` is named by its index).
        """
        try:
            with self.path.open("rb") as stream:
                yield from self._parse(stream)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", source=str(self.path)) from exc
        except ijson.JSONError as exc:
            raise InputError(f"not JSON: {exc}", source=str(self.path)) from exc
        _check(self.head, self.path)

    def _parse(self, stream: Any) -> Iterator[dict[str, Any]]:
        head, case = ijson.ObjectBuilder(), None
        seen_cases, count = False, 0
        for prefix, event, value in ijson.parse(stream, use_float=True):
            if prefix == "cases.item" and event == "start_map":
                case = ijson.ObjectBuilder()
            if case is not None:
                case.event(event, value)
                if prefix == "cases.item" and event == "end_map":
                    if "passed" not in case.value:
                        raise InputError(f"case {count}: no 'passed' field", source=str(self.path))
                    yield case.value
                    case, count = None, count + 1
            elif prefix == "" and event == "map_key" and value == "cases":
                seen_cases = True
            elif prefix == "cases" or prefix.startswith("cases."):
                if prefix == "cases.item":  # an entry that is not an object
                    raise InputError("a case entry is not an object", source=str(self.path))
            else:
                head.event(event, value)
        self.head = head.value if isinstance(head.value, dict) else {}
        if seen_cases:
            self.head["cases"] = []  # present (checked), read apart
