"""Comparing runs: baselines, case-by-case comparison, regression rules, structural trace diff.

Pure functions over run documents (``tracegrade.run/1``, :mod:`tracegrade.report.document`),
shared by the CLI (``compare``, ``runs``, ``history``, ``--baseline``), the reports and the web
dashboard::

    from tracegrade.compare import RegressionRules, compare_runs
    comparison = compare_runs(base_doc, current_doc, RegressionRules())
    comparison.regression, comparison.reasons, comparison.to_json()

Reading stored runs is the store's job (:mod:`tracegrade.store.runs`); this package does no
I/O besides :func:`read_document`.
"""

from tracegrade.compare.diff import diff_traces
from tracegrade.compare.documents import read_document
from tracegrade.compare.model import (
    SCHEMA_VERSION,
    ArgumentChange,
    CallDelta,
    CaseComparison,
    CaseStatus,
    Comparison,
    Delta,
    RunOverview,
    StatTest,
    TraceDiff,
)
from tracegrade.compare.overviews import group_cases, hallucinated, hallucination_rate, overview
from tracegrade.compare.rules import RegressionRules, rules_from
from tracegrade.compare.runs import compare_runs, paired_test

__all__ = [
    "SCHEMA_VERSION",
    "ArgumentChange",
    "CallDelta",
    "CaseComparison",
    "CaseStatus",
    "Comparison",
    "Delta",
    "RegressionRules",
    "RunOverview",
    "StatTest",
    "TraceDiff",
    "compare_runs",
    "diff_traces",
    "group_cases",
    "hallucinated",
    "hallucination_rate",
    "overview",
    "paired_test",
    "read_document",
    "rules_from",
]
