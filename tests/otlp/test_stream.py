"""Streaming trace files (tracegrade.otlp.stream): the same traces as reading everything, in
the same order, and only the traces still open held in memory."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.support.sdk import agent_turn, record
from tracegrade.errors import InputError
from tracegrade.otlp.codec import ExportTraceServiceRequest, request_to_json
from tracegrade.otlp.files import Payloads, ReadOptions, read_paths, write_jsonl
from tracegrade.otlp.stream import iter_traces
from tracegrade.spans import group_by_trace

ROOT = Path(__file__).parents[2]
CORPORA = sorted(
    p
    for base in (ROOT / "datasets", ROOT / "tests" / "data")
    for p in base.rglob("*")
    if p.is_file()
    and p.name.endswith((".json", ".jsonl", ".jsonl.gz", ".json.gz", ".binpb"))
    and "manifest" not in p.name
)


def reference(paths, options=None):
    payloads = read_paths(paths, options or ReadOptions())
    traces = [t for t in group_by_trace(payloads.spans(), payloads.log_records()) if t.spans]
    return traces, [str(e) for e in payloads.errors]


def streamed(paths, options=None):
    sink = Payloads()
    traces = list(iter_traces(paths, options or ReadOptions(), sink))
    return traces, [str(e) for e in sink.errors]


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_corpus_file_streams_to_exactly_what_reading_it_whole_gives(path):
    options = ReadOptions(messages_key="traj" if "tau-bench/" in str(path) else "messages")
    assert streamed([path], options) == reference([path], options)


def _turns(n: int) -> list[ExportTraceServiceRequest]:
    """One SDK-encoded request per span, for n agent turns (n traces of 3 spans each)."""
    spans = record(lambda tracer: [agent_turn(tracer, f"q{i}") for i in range(n)])
    return [encode_spans([span]) for span in spans]


def test_a_trace_split_over_interleaved_lines_is_whole_and_in_first_seen_order(tmp_path):
    requests = _turns(3)  # spans end child-first: chat, tool, agent per trace
    a, b, c = requests[0:3], requests[3:6], requests[6:9]
    order = [a[0], b[0], a[1], c[0], b[1], a[2], c[1], b[2], c[2]]
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, order)
    got, errors = streamed([path])
    assert errors == [] and got == reference([path])[0]
    assert [len(t.spans) for t in got] == [3, 3, 3]


def test_only_the_traces_still_open_are_held(tmp_path, monkeypatch):
    """Each trace written whole (as exporters write finished traces): one trace in memory at a
    time, whatever the file's length."""
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(40))  # 120 lines, each trace on 3 consecutive lines
    traces = iter_traces([path])
    held = [len(next(traces).spans)]
    pending = traces.gi_frame.f_locals["pending"]  # the traces read but not yet yielded
    held += [len(pending) for _ in traces]
    assert held == [3] + [0] * 39  # nothing else is pending when a trace is yielded


def test_bad_lines_are_reported_before_the_first_trace_and_the_rest_loads(tmp_path):
    path = tmp_path / "traces.jsonl.gz"
    good = json.dumps(request_to_json(_turns(1)[0]))
    path.write_bytes(gzip.compress(f'{good}\nnot json\n{{"resourceSpans": 3}}\n'.encode()))
    sink = Payloads()
    traces = iter_traces([path], sink=sink)
    first = next(traces)
    assert [e.line for e in sink.errors] == [2, 3] and len(first.spans) == 1
    assert [str(e) for e in sink.errors] == reference([path])[1]


def test_a_missing_path_fails_at_once():
    with pytest.raises(InputError, match="no such file"):
        iter_traces(["/nonexistent/traces.jsonl"])


def test_a_file_that_grows_between_the_passes_yields_what_was_indexed(tmp_path):
    """A Collector may still be appending: lines added after the index pass are not read."""
    path = tmp_path / "traces.jsonl"
    requests = _turns(2)
    write_jsonl(path, requests[:3])
    traces = iter_traces([path])
    write_jsonl(path, requests[3:], append=True)  # the index pass has not run yet...
    assert [len(t.spans) for t in traces] == [3, 3]  # ...so both traces are indexed

    write_jsonl(path, requests[:3])
    traces = iter_traces([path])
    first = next(traces)  # indexed: one trace
    write_jsonl(path, requests[3:], append=True)
    assert len(first.spans) == 3 and list(traces) == []


def test_a_file_truncated_between_the_passes_ends_the_stream_without_error(tmp_path):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(40))
    traces = iter_traces([path])
    assert len(next(traces).spans) == 3
    path.write_text("")  # e.g. rotated by the Collector
    rest = list(traces)  # what was already buffered, then nothing
    assert len(rest) < 39 and all(t.spans for t in rest)
