"""Run documents from files: the ``--json`` output of ``tracegrade score`` and ``run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracegrade.errors import InputError

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
    if not isinstance(doc, dict) or doc.get("schema_version") != RUN_SCHEMA:
        raise InputError(
            f"not a {RUN_SCHEMA} document (write one with `tracegrade score --json PATH`)",
            source=str(path),
        )
    for key in ("run", "summary", "cases"):
        if key not in doc:
            raise InputError(f"run document without {key!r}", source=str(path))
    return doc
