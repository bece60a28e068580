"""Issue 27: every code example of the docs and the README runs (see
:mod:`tests.docs.examples` for how each kind of block runs), so a broken example fails here.
One test per example, in page order; the examples of a page share a working directory and a
namespace, and a selected example first runs the ones before it on its page."""

from __future__ import annotations

import re
import unittest
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sybil import Document, Example

from tests.docs.examples import ROOT, RUNNABLE, SYBIL, documents, prepare, skip_reasons


@dataclass
class _PageRun:
    document: Document
    examples: list[Example]
    done: int = 0
    failed: str | None = None
    skipped: dict[int, str] = field(default_factory=dict)


_RUNS: dict[Path, _PageRun] = {}


def _example_ids() -> list[tuple[Path, int]]:
    ids = []
    for path in documents():
        count = len(list(SYBIL.parse(path)))
        ids += [(path, index) for index in range(count)]
    return ids


def _page(path: Path, factory: pytest.TempPathFactory) -> _PageRun:
    if path not in _RUNS:
        document = SYBIL.parse(path)
        name = str(path.relative_to(ROOT)).replace("/", "-").removesuffix(".md")
        document.namespace["__page__"] = prepare(factory.mktemp(name) / "repo")
        _RUNS[path] = _PageRun(document, list(document))
    return _RUNS[path]


def _run_until(run: _PageRun, index: int) -> None:
    while run.done <= index:
        example = run.examples[run.done]
        run.done += 1
        try:
            example.evaluate()
        except unittest.SkipTest as skip:
            run.skipped[run.done - 1] = str(skip)
        except Exception as exc:
            run.failed = f"line {example.line}"
            raise exc


_IDS = _example_ids()


@pytest.mark.parametrize(
    ("path", "index"),
    _IDS,
    ids=[f"{p.relative_to(ROOT)}#{i}" for p, i in _IDS],
)
def test_docs_example_runs(path: Path, index: int, tmp_path_factory: pytest.TempPathFactory):
    run = _page(path, tmp_path_factory)
    if run.failed is not None and run.done <= index:
        pytest.skip(f"an earlier example of this page failed ({run.failed})")
    example = run.examples[index]
    _run_until(run, index)
    if index in run.skipped:
        pytest.skip(f"{path.name}:{example.line}: {run.skipped[index]}")


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_skipped_example_says_why(path: Path):
    missing = [line for line, reason in skip_reasons(path) if not reason]
    assert not missing, f"{path.name}: skip without a reason at line(s) {missing}"


def test_the_docs_have_runnable_examples_in_every_language():
    languages = {
        example.parsed.language
        for path in documents()
        for example in SYBIL.parse(path)
        if hasattr(example.parsed, "language")
    }
    assert languages == set(RUNNABLE)


_BARE = re.compile(r"^(?:\w+=\S*\s+)*(tracegrade|python|pip|pytest)\b")


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_uses_the_venv_invocation(path: Path):
    """Commands are written as ``.venv/bin/tracegrade ...`` everywhere (said once, on the
    first page and in the README); only ``python3`` itself creates the venv."""
    bare = [
        f"line {example.line}: {line.strip()}"
        for example in SYBIL.parse(path)
        if getattr(example.parsed, "language", None) == "bash"
        for line in example.parsed.source.splitlines()
        if _BARE.match(line.strip())
    ]
    assert not bare, f"{path.name}: commands not run through .venv/bin/: {bare}"
