"""What ``score`` and ``run`` do with a finished run document: write ``--json`` and
``--junit``, store the run, and choose the exit code. Every string of the document is redacted
first (:class:`~tracegrade.otlp.redaction.Redactor`: reasons quote values from traces that a
``score FILE`` read unredacted), so no output and no stored run holds a secret."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracegrade.errors import ExitCode
from tracegrade.otlp.redaction import Redactor
from tracegrade.report.junit import write_junit
from tracegrade.run_document import read_head
from tracegrade.store.runs import save_run
from tracegrade.store.traces import Store


def write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to the file at ``path``, creating its directory."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as indented JSON (non-ASCII kept) to ``path`` (see :func:`write_text`)."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False))


def write_document(path: str, doc: dict[str, Any]) -> None:
    """Write a run document as :func:`write_json` does, one case entry at a time (its
    ``cases`` may be a :class:`~tracegrade.report.caselog.CaseLog` larger than memory): the
    same text as ``json.dumps(doc, indent=2, ensure_ascii=False)``."""
    if list(doc)[-1:] != ["cases"] or len(doc) < 2:
        write_json(path, {**doc, "cases": list(doc["cases"])})
        return
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, indent=2, ensure_ascii=False)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8") as out:
        out.write(head[: -len("\n}")] + ',\n  "cases": [')
        separator = "\n"
        for case in doc["cases"]:
            text = json.dumps(case, indent=2, ensure_ascii=False)
            out.write(separator + "    " + text.replace("\n", "\n    "))
            separator = ",\n"
        out.write("\n  ]\n}" if separator == ",\n" else "]\n}")


class RedactedCases:
    """A run document's cases (a list or a :class:`~tracegrade.report.caselog.CaseLog`)
    redacted one at a time as they are read, so a run larger than memory stays streamed."""

    def __init__(self, cases: Any, redactor: Redactor):
        self.cases, self.redactor = cases, redactor

    def __iter__(self) -> Iterator[Any]:
        return (self.redactor.data(case) for case in self.cases)

    def __len__(self) -> int:
        return len(self.cases)


def redacted_document(doc: dict[str, Any], redactor: Redactor | None = None) -> dict[str, Any]:
    """``doc`` with every string redacted (its keys kept in order; ``cases`` redacted as read:
    :class:`RedactedCases`)."""
    redactor = redactor or Redactor()
    return {
        key: RedactedCases(value, redactor) if key == "cases" else redactor.data(value)
        for key, value in doc.items()
    }


def write_outputs(
    doc: dict[str, Any],
    db: str | None,
    json_path: str | None,
    junit_path: str | None,
    no_save: bool,
) -> str | None:
    """Write the JSON document and the JUnit XML where asked, and store the run in the store
    at ``db`` (None: the default store) unless ``no_save`` (``doc["cases"]``: a list, or a
    :class:`~tracegrade.report.caselog.CaseLog` read back one entry at a time). Returns the
    store's location (password masked) when the run was stored, else None.

    Raises:
        StoreError: the store cannot be opened.
    """
    doc = redacted_document(doc)
    if json_path:
        write_document(json_path, doc)
    if junit_path:
        write_junit(doc, junit_path)
    if no_save:
        return None
    with Store(db) as store:
        save_run(store, doc)
        return store.location


def verdict(doc: dict[str, Any]) -> ExitCode:
    """0 when the run passed, else 1 (the caller decides the usage cases, exit 2)."""
    return ExitCode.OK if read_head(doc).run.passed else ExitCode.FAILED
