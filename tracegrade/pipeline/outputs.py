"""What ``score`` and ``run`` do with a finished run document: write ``--json`` and
``--junit``, store the run, and choose the exit code. Every string of the document is redacted
first (:class:`~tracegrade.otlp.redaction.Redactor`: reasons quote values from traces that a
``score FILE`` read unredacted), so no output and no stored run holds a secret.

A case entry is serialised once, when it is scored (:func:`~tracegrade.run_document.entry_json`);
its redaction is checked on that JSON (:meth:`~tracegrade.otlp.redaction.Redactor.may_apply`,
one pass of an automaton: an entry nothing could match is written as it is), and the ``--json``
file, the store and the JUnit XML read the same redacted entries.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from tracegrade.errors import ExitCode
from tracegrade.otlp.redaction import Redactor
from tracegrade.report.caselog import CaseLog
from tracegrade.report.junit import write_junit
from tracegrade.run_document import (
    CaseEntries,
    RunHead,
    StreamedDocument,
    head_json,
    read_head,
)
from tracegrade.store.runs import save_run
from tracegrade.store.traces import Store


def write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to the file at ``path``, creating its directory."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as indented JSON (non-ASCII kept) to ``path`` (see :func:`write_text`)."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False))


_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')
"""A JSON string or number (outside strings, a number is always matched whole)."""
_UNLIKE_REPR = re.compile(rb"-?0\.0000\d*|-?\d(?:\.\d+)?e-\d")
"""A number orjson writes unlike Python's ``repr``: below 1e-4, ``0.00001`` for ``1e-05``
and ``1e-7`` for ``1e-07``."""
_MAYBE_UNLIKE = re.compile(rb"0\.0000|\de-\d(?!\d)")


def _python_number(found: re.Match[bytes]) -> bytes:
    token = found.group(0)
    return repr(float(token)).encode() if _UNLIKE_REPR.fullmatch(token) else token


def indented_entry(line: bytes) -> bytes:
    """A case entry's JSON line as ``json.dumps(entry, indent=2, ensure_ascii=False)`` writes
    it (orjson's indentation; its few numbers written unlike Python's, as Python writes
    them)."""
    text = orjson.dumps(orjson.loads(line), option=orjson.OPT_INDENT_2)
    if _MAYBE_UNLIKE.search(text):
        text = _TOKEN.sub(_python_number, text)
    return text


def write_document(path: str, doc: StreamedDocument) -> None:
    """Write a run document as indented JSON (non-ASCII kept), one case entry at a time (its
    cases may be a :class:`~tracegrade.report.caselog.CaseLog` larger than memory): the same
    text as ``json.dumps(document, indent=2, ensure_ascii=False)``."""
    head = json.dumps(head_json(doc.head), indent=2, ensure_ascii=False).encode()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("wb") as out:
        out.write(head[: -len(b"\n}")] + b',\n  "cases": [')
        separator = b"\n"
        for line in doc.cases.lines():
            out.write(separator + b"    " + indented_entry(line).replace(b"\n", b"\n    "))
            separator = b",\n"
        out.write(b"\n  ]\n}" if separator == b",\n" else b"]\n}")


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
"""A JSON string, with its quotes (a key's closing quote is how a key rule finds it)."""


def redacted_cases(cases: CaseEntries, redactor: Redactor) -> CaseLog:
    """A run document's case entries with every string redacted, in a case log of their own
    (each entry read and redacted once, then read by every output; the caller closes it): an
    entry whose strings and keys hold nothing a rule could match (a key, an anchor, a
    card-length digit run: :meth:`Redactor.may_apply`) is copied as it is, another has every
    string redacted (:meth:`Redactor.data`). The check reads the entry's JSON strings as
    written (its numbers left out: a score's 16 digits are no card number), as the receiver
    checks an OTLP/JSON body."""
    log = CaseLog()
    for line in cases.lines():
        if redactor.may_apply(b"\n".join(_STRING.findall(line)), "json"):
            line = orjson.dumps(redactor.data(orjson.loads(line)))
        log.add_line(line)
    return log


def redacted_head(head: RunHead, redactor: Redactor) -> RunHead:
    """A run document's head with every string redacted."""
    return RunHead.model_validate(redactor.data(head_json(head)))


def write_outputs(
    doc: StreamedDocument,
    db: str | None,
    json_path: str | None,
    junit_path: str | None,
    no_save: bool,
) -> str | None:
    """Write the JSON document and the JUnit XML where asked, and store the run in the store
    at ``db`` (None: the default store) unless ``no_save`` (its cases read one entry at a
    time). Returns the store's location (password masked) when the run was stored, else None.

    Raises:
        StoreError: the store cannot be opened.
    """
    redactor = Redactor()
    with redacted_cases(doc.cases, redactor) as cases:
        doc = StreamedDocument(redacted_head(doc.head, redactor), cases)
        if json_path:
            write_document(json_path, doc)
        if junit_path:
            write_junit(doc, junit_path)
        if no_save:
            return None
        with Store(db) as store:
            save_run(store, doc)
            return store.location


def verdict(doc: StreamedDocument) -> ExitCode:
    """0 when the run passed, else 1 (the caller decides the usage cases, exit 2)."""
    return ExitCode.OK if read_head(doc).run.passed else ExitCode.FAILED
