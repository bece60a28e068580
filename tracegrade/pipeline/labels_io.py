"""Human labels as data: ``tracegrade review export FILE`` writes every stored label as one
JSON object a line (``tracegrade.label/1``), and ``review import FILE`` takes such lines back
(labels from another store, another tool, or a benchmark's recorded outcomes).

A line::

    {"schema_version": "tracegrade.label/1", "conversation": "trace:4bf9...",
     "trace_ids": ["4bf9..."], "reviewer": "ana", "created_at": 1764000000.0,
     "verdict": "fail", "axes": {"tools_right": "fail"}, "note": "...",
     "expectation": {"must_contain": ["$129.00"]}, "queue": "negative-feedback",
     "source": "review"}

Only ``trace_ids``, ``reviewer`` and ``verdict`` are required on import (``created_at``
defaults to now, ``source`` to ``import``, ``conversation`` to the stored traces'
conversation, else ``trace:<first id>``); unknown fields are refused. A bad line is reported as
``file:line: reason`` and skipped; the good lines are imported. Importing the same line twice
adds nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracegrade.errors import ConfigError, InputError
from tracegrade.pipeline.review import LabelInput, record_label
from tracegrade.store import review as queue_store
from tracegrade.store.traces import Store

SCHEMA_VERSION = "tracegrade.label/1"


class LabelLine(BaseModel):
    """One line of a labels file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["tracegrade.label/1"] = "tracegrade.label/1"
    conversation: str | None = None
    trace_ids: list[str] = Field(min_length=1)
    reviewer: str = Field(min_length=1)
    created_at: float | None = None
    verdict: Literal["pass", "fail"]
    axes: dict[str, Literal["pass", "fail"]] = Field(default_factory=dict)
    note: str | None = None
    expectation: dict[str, Any] | None = None
    queue: str | None = None
    source: str = "import"


def export_labels(db: str | None, path: str | Path, since_s: float | None = None) -> int:
    """Write the stored labels (made since ``since_s``, Unix s), oldest first, one JSON object
    a line; returns how many."""
    with Store(db) as store:
        labels = queue_store.labels(store.db, since_s=since_s)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as out:
        for label in labels:
            line = {"schema_version": SCHEMA_VERSION, **label.to_dict()}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(labels)


@dataclass
class Imported:
    """What an import did: labels added, lines already stored, bad lines (file:line)."""

    added: int = 0
    duplicates: int = 0
    errors: list[InputError] = field(default_factory=list)


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "line"
    return f"{where}: {first.get('msg', 'invalid')}"


def import_labels(db: str | None, path: str | Path) -> Imported:
    """Store the labels of a labels file (see the module docstring).

    Raises:
        InputError: the file cannot be read.
    """
    source = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read labels: {exc}", source=source) from exc
    report = Imported()
    with Store(db) as store:
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                line = LabelLine.model_validate_json(text)
                _, added = record_label(store, _label_input(line))
            except (ValidationError, ConfigError) as exc:
                why = _problem(exc) if isinstance(exc, ValidationError) else str(exc)
                report.errors.append(InputError(why, source=source, line=number))
                continue
            report.added += added
    report.duplicates = sum(1 for t in lines if t.strip()) - report.added - len(report.errors)
    return report


def _label_input(line: LabelLine) -> LabelInput:
    """The label a file's line records (the same fields, less its schema version)."""
    return LabelInput(**line.model_dump(exclude={"schema_version"}))
