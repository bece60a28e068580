""":class:`OtlpExport`'s bounds, against an endpoint that accepts connections and never
answers (a black hole: the SDK's request waits out its timeout): records queue up to the
bound, then wait a moment for room and are dropped while the endpoint does not keep up;
closing gives up at its deadline; every record not accepted is counted, and the warning
says why. (A refusing endpoint is tests/report/test_otlp_export.py's.)"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tracegrade.report import otlp_export
from tracegrade.report.evaluation_signals import EvaluationRecord, Figure
from tracegrade.report.otlp_export import ExportTarget, OtlpExport

RECORD = EvaluationRecord("ab" * 16, "cd" * 8, {"gen_ai.evaluation.name": "overall"})


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A listening socket that never accepts: connections complete, requests go unanswered."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_black_hole_bounds_the_queue_the_wait_and_the_close(black_hole, monkeypatch, protocol):
    monkeypatch.setattr(otlp_export, "QUEUE_RECORDS", 8)
    monkeypatch.setattr(otlp_export, "BATCH_RECORDS", 4)
    monkeypatch.setattr(otlp_export, "ROOM_WAIT_S", 0.2)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "30")  # the SDK would wait this long
    export = OtlpExport(ExportTarget.resolve(black_hole, {"OTEL_EXPORTER_OTLP_PROTOCOL": protocol}))
    started = time.monotonic()
    export.send([RECORD] * 200)
    sent_s = time.monotonic() - started
    export.record([Figure("tracegrade.evaluation.pass_rate", 1.0)])
    started = time.monotonic()
    report = export.close(timeout_s=0.5)
    closed_s = time.monotonic() - started
    assert sent_s < 1.5  # one wait for room, then dropped at once
    assert closed_s < 1.5  # the deadline, not the SDK's 30 s
    assert (report.records_sent, report.records_lost, report.figures_lost) == (0, 200, True)
    warning = report.warning()
    assert warning is not None and "200 of 200 evaluation records and the figures" in warning
    assert "does not keep up" in warning


def test_a_closed_export_takes_no_more_records(black_hole):
    export = OtlpExport(ExportTarget.resolve(black_hole, {}))
    export.close(timeout_s=0.1)
    export.send([RECORD])
    assert export.close().records_lost == 1
