"""What ``score`` and ``run`` do with a finished run document: write ``--json`` and
``--junit``, store the run, and choose the exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracegrade.errors import ExitCode
from tracegrade.report.junit import write_junit
from tracegrade.store.runs import save_run
from tracegrade.store.traces import Store


def write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to the file at ``path``, creating its directory."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as indented JSON (non-ASCII kept) to ``path`` (see :func:`write_text`)."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False))


def write_outputs(
    doc: dict[str, Any],
    db: str | None,
    json_path: str | None,
    junit_path: str | None,
    no_save: bool,
) -> None:
    """Write the JSON document and the JUnit XML where asked, and store the run in the store
    at ``db`` unless ``no_save``.

    Raises:
        StoreError: the store cannot be opened.
    """
    if json_path:
        write_json(json_path, doc)
    if junit_path:
        write_junit(doc, junit_path)
    if not no_save:
        with Store(db) as store:
            save_run(store, doc)


def verdict(doc: dict[str, Any]) -> ExitCode:
    """0 when the run passed, else 1 (the caller decides the usage cases, exit 2)."""
    return ExitCode.OK if doc["run"]["passed"] else ExitCode.FAILED
