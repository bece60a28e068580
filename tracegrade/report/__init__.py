"""Reports of a scoring run: the versioned JSON document (also what the store keeps), JUnit
XML for any CI system, the rich console report, and the ``gen_ai.evaluation.result`` records
and figures sent over OTLP (``--export-otlp``)."""

from typing import TYPE_CHECKING

from tracegrade._util.lazy_import import lazy

_EXPORTS = {
    "case_entry": "tracegrade.report.document",
    "run_meta": "tracegrade.report.document",
    "print_report": "tracegrade.report.console",
    "write_junit": "tracegrade.report.junit",
    "CaseLog": "tracegrade.report.caselog",
    "CaseList": "tracegrade.report.caselog",
    "post_webhook": "tracegrade.report.alerts",
    "OtlpExport": "tracegrade.report.otlp_export",
    "ExportTarget": "tracegrade.report.otlp_export",
    "evaluation_records": "tracegrade.report.evaluation_signals",
}
__all__ = [
    "case_entry",
    "run_meta",
    "print_report",
    "write_junit",
    "CaseLog",
    "CaseList",
    "post_webhook",
    "OtlpExport",
    "ExportTarget",
    "evaluation_records",
]
__getattr__, __dir__ = lazy(_EXPORTS)

if TYPE_CHECKING:
    from tracegrade.report.alerts import post_webhook
    from tracegrade.report.caselog import CaseList, CaseLog
    from tracegrade.report.console import print_report
    from tracegrade.report.document import case_entry, run_meta
    from tracegrade.report.evaluation_signals import evaluation_records
    from tracegrade.report.junit import write_junit
    from tracegrade.report.otlp_export import ExportTarget, OtlpExport
