"""Scale-out on PostgreSQL (issue 13 item 5): two ``tracegrade collect`` receivers write one
store, two ``score --follow`` workers share its settled traces; one worker is killed with
SIGKILL mid-way. Every trace is scored exactly once (counted in the store)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.support.collect_process import CollectProcess, command
from tests.support.postgres import fresh_database
from tests.support.sdk import agent_turn
from tracegrade.store import follow as shared
from tracegrade.store.traces import Store

TRACES = 40


class Worker:
    """A ``tracegrade score --follow`` subprocess; ``lines`` collects its stdout."""

    def __init__(self, url: str):
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [
                *command(),
                "score",
                "--follow",
                "--db",
                url,
                "--since",
                "1h",
                "--quiet-s",
                "0.3",
                "--lease-s",
                "2",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        assert "scoring traces as they settle" in self.process.stderr.readline()
        self.errors: list[str] = []
        for stream, lines in (
            (self.process.stdout, self.lines),
            (self.process.stderr, self.errors),
        ):
            threading.Thread(target=self._pump, args=(stream, lines), daemon=True).start()

    @staticmethod
    def _pump(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)


BURST = 10
"""Traces per export: each export holds whole traces, so a trace is one write (version 1)."""


def _send(endpoint: str, count: int, offset: int) -> set[str]:
    """``count`` agent turns through the SDK's OTLP/HTTP exporter, exported in bursts of
    :data:`BURST` whole traces; returns their trace ids.

    The batch processor's timer is off (a minute) and each burst is flushed after its last
    trace ends: with a 50 ms timer a trace's first spans could leave in one export and its
    root in the next, and under load the follower (``--quiet-s 0``) scored the first part
    before the rest arrived, then the grown trace again as version 2 (counted as scored
    twice in a CI run with two test workers), which is right for the follower and wrong for
    a test of exactly once.
    """
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"), schedule_delay_millis=60_000
        )
    )
    tracer = provider.get_tracer("scale-out")
    ids = set()
    for i in range(count):
        with tracer.start_as_current_span("conversation") as root:
            agent_turn(tracer, f"find shoes {offset + i}", f"Found {offset + i} shoes")
            ids.add(format(root.get_span_context().trace_id, "032x"))
        if (i + 1) % BURST == 0:
            provider.force_flush()
    provider.shutdown()
    return ids


def _counts(url: str) -> dict[str, int]:
    with Store(url) as store:
        return shared.result_counts(store.db)


def test_two_receivers_two_workers_one_killed_every_trace_scored_once():
    with fresh_database() as url:
        with Store(url):
            pass  # migrate once before four processes start
        with CollectProcess(url) as first, CollectProcess(url) as second:
            workers = [Worker(url), Worker(url)]
            try:
                sent = _send(first.http_endpoint, TRACES // 2, 0)
                deadline = time.monotonic() + 60
                while not any(w.lines for w in workers) and time.monotonic() < deadline:
                    time.sleep(0.05)
                busy = next(w for w in workers if w.lines)  # the worker that started scoring
                os.kill(busy.process.pid, signal.SIGKILL)  # mid-way
                busy.process.wait(10)
                sent |= _send(second.http_endpoint, TRACES // 2, TRACES // 2)
                deadline = time.monotonic() + 60
                while len(_counts(url)) < TRACES and time.monotonic() < deadline:
                    time.sleep(0.2)
                counts = _counts(url)
            finally:
                for worker in workers:
                    if worker.process.poll() is None:
                        worker.process.send_signal(signal.SIGTERM)
                        worker.process.wait(30)
    assert len(sent) == TRACES
    assert counts == {trace_id: 1 for trace_id in sent}, (
        f"{len(counts)} of {TRACES} scored; twice: {[t for t, n in counts.items() if n > 1]}; "
        f"worker stderr: {[w.errors[-20:] for w in workers]}"
    )
    assert all(w.lines for w in workers)  # the killed worker and the survivor both scored
