"""JUnit XML of a run document, for any CI system (one ``testcase`` per case result)."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracegrade.run_document import (
    CaseEntry,
    RunHead,
    StreamedDocument,
    document_cases,
    read_cases,
    read_head,
)


def _failure_type(case: CaseEntry) -> str:
    if case.trace_id is None:
        return "unmatched"
    return "hard_failure" if case.hard_failures else "below_threshold"


def _testcase(suite: ET.Element, case: CaseEntry, classname: str, threshold: float | None) -> None:
    seconds = ((case.usage.duration_ms if case.usage else None) or 0) / 1000
    element = ET.SubElement(
        suite,
        "testcase",
        classname=classname,
        name=str(case.case_id or case.trace_id or "(no case, no trace)"),
        time=f"{seconds:.3f}",
    )
    properties = ET.SubElement(element, "properties")
    runner = [("flaky", case.flaky), ("spread", case.spread)] if case.flaky is not None else []
    for key, value in [
        ("trace_id", case.trace_id),
        ("score", case.score),
        *runner,
        *case.scores.items(),
    ]:
        ET.SubElement(
            properties, "property", name=str(key), value="" if value is None else str(value)
        )
    if case.error:  # tracegrade run: the agent failed (crash, non-zero exit, timeout, ...)
        ET.SubElement(
            element, "error", message=case.error[:500], type="agent_error"
        ).text = case.error
    elif not case.passed:
        score = "n/a" if case.score is None else f"{case.score:.3f}"
        message = case.reasons[0] if case.reasons else f"score {score} < {threshold}"
        failure = ET.SubElement(element, "failure", message=message, type=_failure_type(case))
        failure.text = "\n".join([f"score {score} (threshold {threshold})", *case.reasons])
    ET.SubElement(element, "system-out").text = json.dumps(case.scores)


def _suite_name(head: RunHead) -> str:
    """The test suite's name: the dataset's, else ``traces`` (reference-free scoring)."""
    return (head.run.dataset.name if head.run.dataset else None) or "traces"


def to_junit(doc: StreamedDocument | Mapping[str, Any]) -> ET.ElementTree:
    """The run as ``<testsuites><testsuite><testcase>...``; failed cases carry ``<failure>``.
    ``doc`` is read through :func:`~tracegrade.run_document.read_head` and
    :func:`~tracegrade.run_document.read_cases`.

    Raises:
        InputError: ``doc`` is not a ``tracegrade.run/1`` document (the field named).
    """
    tree = _suite(read_head(doc))
    suite = next(tree.iter("testsuite"))
    name, threshold = suite.get("name"), read_head(doc).summary.threshold
    for case in document_cases(doc):
        _testcase(suite, case, f"tracegrade.{name}", threshold)
    return tree


def _suite(head: RunHead) -> ET.ElementTree:
    """The run's test suite without its test cases."""
    summary, run, name = head.summary, head.run, _suite_name(head)
    errors = summary.agent_errors
    failures = str(summary.failed - errors)
    root = ET.Element(
        "testsuites",
        name="tracegrade",
        tests=str(summary.results),
        failures=failures,
        errors=str(errors),
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name=name,
        tests=str(summary.results),
        failures=failures,
        errors=str(errors),
        skipped="0",
        timestamp=run.created_at or "",
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in [
        ("run_id", run.run_id),
        ("git_sha", run.git_sha),
        ("git_branch", run.git_branch),
        ("label", run.label),
        ("agent_version", run.agent_version),
        ("tracegrade_version", run.tracegrade_version),
    ]:
        ET.SubElement(properties, "property", name=key, value=str(value or ""))
    for key, number in [
        ("score", summary.score),
        ("pass_rate", summary.pass_rate),
        ("cost_usd", summary.cost_usd),
        ("latency_p50_ms", summary.latency_p50_ms),
        ("latency_p95_ms", summary.latency_p95_ms),
    ]:
        if number is not None:  # unknown (no priced model, no trace): no property, not "None"
            ET.SubElement(properties, "property", name=key, value=str(number))
    return ET.ElementTree(root)


_SLOT = "tracegrade-testcases"
"""The element the test cases are written in place of, one at a time."""


def write_junit(doc: StreamedDocument | Mapping[str, Any], path: str | Path) -> None:
    """Write the JUnit XML of ``doc`` to ``path``: the same bytes as :func:`to_junit` indented,
    written one test case at a time (its cases may be a
    :class:`~tracegrade.report.caselog.CaseLog` larger than memory)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    cases = doc.cases if isinstance(doc, StreamedDocument) else doc["cases"]
    run_head = read_head(doc)
    if not len(cases):
        tree = _suite(run_head)
        ET.indent(tree)
        tree.write(path, encoding="utf-8", xml_declaration=True)
        return
    head, tail = _skeleton(run_head)
    name = _suite_name(run_head)
    with Path(path).open("wb") as out:
        out.write(head)
        for n, case in enumerate(read_cases(cases)):
            holder = ET.Element("testsuite")
            _testcase(holder, case, f"tracegrade.{name}", run_head.summary.threshold)
            ET.indent(holder[0], level=2)
            out.write(b"\n    " if n else b"")
            out.write(ET.tostring(holder[0], encoding="unicode").encode())
        out.write(tail)


def _skeleton(head: RunHead) -> tuple[bytes, bytes]:
    """The indented XML of the run without test cases, cut where they go."""
    tree = _suite(head)
    ET.SubElement(next(tree.iter("testsuite")), _SLOT)
    ET.indent(tree)
    buffer = io.BytesIO()
    tree.write(buffer, encoding="utf-8", xml_declaration=True)
    before, after = buffer.getvalue().split(f"<{_SLOT} />".encode())
    return before, after
