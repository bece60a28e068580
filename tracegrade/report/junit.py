"""JUnit XML of a run document, for any CI system (one ``testcase`` per case result)."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def _failure_type(case: dict[str, Any]) -> str:
    if case["trace_id"] is None:
        return "unmatched"
    return "hard_failure" if case["hard_failures"] else "below_threshold"


def _testcase(suite: ET.Element, case: dict[str, Any], classname: str, threshold: float) -> None:
    usage = case.get("usage") or {}
    seconds = (usage.get("duration_ms") or 0) / 1000
    element = ET.SubElement(
        suite,
        "testcase",
        classname=classname,
        name=str(case["case_id"] or case["trace_id"]),
        time=f"{seconds:.3f}",
    )
    properties = ET.SubElement(element, "properties")
    runner = [("flaky", case["flaky"]), ("spread", case["spread"])] if "flaky" in case else []
    for key, value in [
        ("trace_id", case["trace_id"]),
        ("score", case["score"]),
        *runner,
        *case["scores"].items(),
    ]:
        ET.SubElement(
            properties, "property", name=str(key), value="" if value is None else str(value)
        )
    if case.get("error"):  # tracegrade run: the agent failed (crash, non-zero exit, timeout, ...)
        ET.SubElement(
            element, "error", message=case["error"][:500], type="agent_error"
        ).text = case["error"]
    elif not case["passed"]:
        score = "n/a" if case["score"] is None else f"{case['score']:.3f}"
        message = case["reasons"][0] if case["reasons"] else f"score {score} < {threshold}"
        failure = ET.SubElement(element, "failure", message=message, type=_failure_type(case))
        failure.text = "\n".join([f"score {score} (threshold {threshold})", *case["reasons"]])
    ET.SubElement(element, "system-out").text = json.dumps(case["scores"])


def to_junit(doc: dict[str, Any]) -> ET.ElementTree:
    """The run as ``<testsuites><testsuite><testcase>...``; failed cases carry ``<failure>``."""
    summary, run = doc["summary"], doc["run"]
    name = (run.get("dataset") or {}).get("name") or "traces"
    errors = summary.get("agent_errors", 0)
    failures = str(summary["failed"] - errors)
    root = ET.Element(
        "testsuites",
        name="tracegrade",
        tests=str(summary["results"]),
        failures=failures,
        errors=str(errors),
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name=name,
        tests=str(summary["results"]),
        failures=failures,
        errors=str(errors),
        skipped="0",
        timestamp=run["created_at"],
    )
    properties = ET.SubElement(suite, "properties")
    for key in ("run_id", "git_sha", "git_branch", "label", "agent_version", "tracegrade_version"):
        ET.SubElement(properties, "property", name=key, value=str(run.get(key) or ""))
    for key in ("score", "pass_rate", "cost_usd", "latency_p50_ms", "latency_p95_ms"):
        ET.SubElement(properties, "property", name=key, value=str(summary.get(key)))
    for case in doc["cases"]:
        _testcase(suite, case, f"tracegrade.{name}", summary["threshold"])
    return ET.ElementTree(root)


_SLOT = "tracegrade-testcases"
"""The element the test cases are written in place of, one at a time."""


def write_junit(doc: dict[str, Any], path: str | Path) -> None:
    """Write the JUnit XML of ``doc`` to ``path``: the same bytes as :func:`to_junit` indented,
    written one test case at a time (``doc["cases"]`` may be a
    :class:`~tracegrade.report.caselog.CaseLog` larger than memory)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    cases = doc["cases"]
    if not len(cases):
        tree = to_junit(doc)
        ET.indent(tree)
        tree.write(path, encoding="utf-8", xml_declaration=True)
        return
    head, tail = _skeleton(doc)
    name = (doc["run"].get("dataset") or {}).get("name") or "traces"
    with Path(path).open("wb") as out:
        out.write(head)
        for n, case in enumerate(cases):
            holder = ET.Element("testsuite")
            _testcase(holder, case, f"tracegrade.{name}", doc["summary"]["threshold"])
            ET.indent(holder[0], level=2)
            out.write(b"\n    " if n else b"")
            out.write(ET.tostring(holder[0], encoding="unicode").encode())
        out.write(tail)


def _skeleton(doc: dict[str, Any]) -> tuple[bytes, bytes]:
    """The indented XML of ``doc`` without test cases, cut where they go."""
    tree = to_junit({**doc, "cases": []})
    ET.SubElement(next(tree.iter("testsuite")), _SLOT)
    ET.indent(tree)
    buffer = io.BytesIO()
    tree.write(buffer, encoding="utf-8", xml_declaration=True)
    head, tail = buffer.getvalue().split(f"<{_SLOT} />".encode())
    return head, tail
