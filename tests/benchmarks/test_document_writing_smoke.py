"""Smoke run of the document-writing benchmark (issue 39): the typed writer and the dict writer
it replaced (the baseline commit's tree, by ``git archive``) both write the document of the
same results, and write the same ``--json`` bytes. Figures are measured by hand, not
asserted."""

from __future__ import annotations

from benchmarks import document_writing


def test_both_writers_write_the_same_document_and_are_timed() -> None:
    figures = document_writing.run(count=150, repeat=1, rounds=1)
    assert figures["traces"] == 150 and figures["same_json"] is True
    assert figures["baseline_s"] > 0 and figures["typed_s"] > 0 and figures["speedup"] > 0
