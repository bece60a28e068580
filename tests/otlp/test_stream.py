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
from tracegrade.otlp import lines as otlp_lines
from tracegrade.otlp import stream
from tracegrade.otlp.codec import ExportTraceServiceRequest, request_to_json
from tracegrade.otlp.files import (
    Payloads,
    ReadOptions,
    golden_dataset_kind,
    read_paths,
    write_jsonl,
)
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
    and golden_dataset_kind(p) is None  # a dataset given as traces is refused: test_wrong_file_kind
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
    pad = {"pad": "x" * 50_000}  # 2 MB in all: more than the read buffer (1 MB)
    spans = record(lambda tracer: [agent_turn(tracer, f"q{i}", attributes=pad) for i in range(40)])
    write_jsonl(path, [encode_spans([span]) for span in spans])
    traces = iter_traces([path])
    assert len(next(traces).spans) == 3
    path.write_text("")  # e.g. rotated by the Collector
    rest = list(traces)  # what was already buffered, then nothing
    assert len(rest) < 39 and all(t.spans for t in rest)


def _lines(requests: list[ExportTraceServiceRequest]) -> list[dict]:
    return [request_to_json(r) for r in requests]


def _write(path: Path, objs: list[dict]) -> None:
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objs))


def test_the_index_reads_canonical_lines_without_decoding_them(tmp_path, monkeypatch):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(4))  # 12 canonical lines
    calls = []
    decode = otlp_lines.loads
    monkeypatch.setattr(otlp_lines, "loads", lambda line: calls.append(line) or decode(line))
    assert streamed([path]) == reference([path])
    assert len(calls) == 11 + 2  # each line once; the first in each pass, to detect the format


def test_ids_that_are_not_lower_case_hex_and_links_to_other_traces_are_decoded(tmp_path):
    objs = _lines(_turns(3))
    span = objs[1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["traceId"] = span["traceId"].upper()
    linked = objs[7]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span = objs[4]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["links"] = [{"traceId": linked["traceId"], "spanId": linked["spanId"]}]
    path = tmp_path / "traces.jsonl"
    _write(path, objs)
    got, errors = streamed([path])
    assert (got, errors) == reference([path]) and [len(t.spans) for t in got] == [3, 3, 3]


def test_a_line_that_looks_canonical_but_is_not_json_is_reported_when_read(tmp_path):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(2))
    lines = path.read_bytes().splitlines(keepends=True)
    lines[4] = lines[4].replace(b'"kind":', b'"kind":,', 1)  # still {"resourceSpans":[{ ... ]}
    path.write_bytes(b"".join(lines))
    assert otlp_lines.predict(lines[4]) is not None
    got, errors = streamed([path])
    assert (got, errors) == reference([path]) and errors[0].startswith(f"{path}:5")


def test_a_line_whose_ids_differ_from_the_index_is_kept_whole(tmp_path, monkeypatch):
    """As if the file changed between the passes: no span is lost."""
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(2))  # lines 1-3: trace a, 4-6: trace b
    wrong = otlp_lines.predict(path.read_bytes().splitlines(keepends=True)[2])
    monkeypatch.setattr(stream, "predict", lambda line: wrong if line.endswith(b"\n") else None)
    got, errors = streamed([path])
    assert sorted(s.span_id for t in got for s in t.spans) == sorted(
        s.span_id for t in reference([path])[0] for s in t.spans
    )


def deferred(paths, options=None):
    """As :func:`streamed`, with the span lines of one trace left undecoded and decoded
    afterwards, trace by trace, as ``score --workers`` does in its worker processes."""
    from tracegrade.pipeline import reading

    errors: list = []
    late = reading.LateErrors()
    traces = []
    for batch in reading.iter_raw_from_files(
        paths, options or ReadOptions(), batch_size=3, errors=errors, late=late
    ):
        for raw in batch:
            trace, found = reading.decoded(raw)
            late.add(found)
            traces += [trace] if trace.spans else []
    return traces, [str(e) for e in errors + late.errors()]


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_corpus_file_read_with_deferred_lines_gives_what_streaming_gives(path):
    options = ReadOptions(messages_key="traj" if "tau-bench/" in str(path) else "messages")
    assert deferred([path], options) == streamed([path], options)


def test_deferred_lines_of_interleaved_traces_keep_their_spans_order(tmp_path):
    requests = _turns(3)
    a, b, c = requests[0:3], requests[3:6], requests[6:9]
    both = ExportTraceServiceRequest()  # one line with spans of two traces: decoded at once
    both.resource_spans.extend([*b[1].resource_spans, *c[0].resource_spans])
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, [a[0], b[0], a[1], both, a[2], c[1], b[2], c[2]])
    got = deferred([path])
    assert got == streamed([path]) and [len(t.spans) for t in got[0]] == [3, 3, 3]
    assert any(isinstance(t, stream.Deferred) for t in iter_traces([path], defer=True))


def test_deferred_lines_that_do_not_decode_give_their_errors_where_one_process_does(tmp_path):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(3))
    lines = path.read_bytes().splitlines(keepends=True)
    for n in (4, 6, 7):  # two of trace b's lines, one of trace c's
        lines[n] = lines[n].replace(b'"kind":', b'"kind":,', 1)
    lines[2] = lines[2].replace(b'"spans":[{', b'"spans":[{"unknown":1,', 1)  # not OTLP
    path.write_bytes(b"".join(lines) + b"not json\n")
    got, errors = deferred([path])
    assert (got, errors) == streamed([path]) and len(errors) == 5


def test_errors_of_deferred_and_of_decoded_lines_come_in_the_order_one_process_meets_them(
    tmp_path,
):
    requests = _turns(3)
    a, b, c = requests[0:3], requests[3:6], requests[6:9]
    both = ExportTraceServiceRequest()  # two traces: the read pass decodes it itself
    both.resource_spans.extend([*b[1].resource_spans, *c[0].resource_spans])
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, [a[0], a[1], b[0], a[2], both, b[2], c[1], c[2]])
    lines = path.read_bytes().splitlines(keepends=True)
    for n in (3, 4, 6):  # deferred, decoded by the read pass, deferred
        lines[n] = lines[n].replace(b'"kind":', b'"kind":,', 1)
    path.write_bytes(b"".join(lines))
    got, errors = deferred([path])
    assert (got, errors) == streamed([path])
    assert [e.split(":")[1] for e in errors] == ["4", "5", "7"]


def _deferred_parts(paths) -> list:
    """The undecoded lines of ``iter_traces(paths, defer=True)``, in read order."""
    traces = iter_traces(paths, defer=True)
    return [
        p
        for t in traces
        if isinstance(t, stream.Deferred)
        for p in t.parts
        if not isinstance(p, list)
    ]


def test_a_plain_file_s_deferred_lines_are_not_read_by_the_read_pass(tmp_path):
    """Where each line is, from the index; decode_deferred reads it (in a worker). The
    first line is decoded by the index (it tells the format)."""
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(3))
    parts = _deferred_parts([path])
    assert len(parts) == 8 and not any(isinstance(p.line, bytes) for p in parts)
    lines = path.read_bytes().splitlines(keepends=True)
    assert [lines[p.line_no - 1] for p in parts] == [stream._line_bytes(p) for p in parts]
    assert deferred([path]) == streamed([path])


def test_a_gzip_file_s_deferred_lines_are_read_by_the_read_pass(tmp_path):
    path = tmp_path / "traces.jsonl.gz"
    write_jsonl(path, _turns(2))
    parts = _deferred_parts([path])
    assert len(parts) == 5 and all(isinstance(p.line, bytes) for p in parts)


def test_without_os_pread_deferred_lines_are_read_by_the_read_pass(tmp_path, monkeypatch):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(2))
    monkeypatch.setattr(stream, "_CAN_PREAD", False)  # as on Windows
    parts = _deferred_parts([path])
    assert len(parts) == 5 and all(isinstance(p.line, bytes) for p in parts)
    assert deferred([path]) == streamed([path])


def test_a_file_changed_between_the_passes_has_its_deferred_lines_read_by_the_read_pass(
    tmp_path, monkeypatch
):
    path = tmp_path / "traces.jsonl"
    requests = _turns(3)
    write_jsonl(path, requests[:6])
    index = stream._index

    def index_then_append(*args):  # as a Collector still writing the file
        found = index(*args)
        write_jsonl(path, requests[6:], append=True)
        return found

    monkeypatch.setattr(stream, "_index", index_then_append)
    traces = list(iter_traces([path], defer=True))
    parts = [p for t in traces for p in t.parts if not isinstance(p, list)]
    assert len(parts) == 5 and all(isinstance(p.line, bytes) for p in parts)
    assert [len(stream.decode_deferred(t)[0].spans) for t in traces] == [3, 3]  # as indexed


def test_a_file_grown_after_the_read_pass_has_its_deferred_lines_decoded(tmp_path):
    """A Collector appends to the file it writes: the lines indexed are still there."""
    path = tmp_path / "traces.jsonl"
    requests = _turns(3)
    write_jsonl(path, requests[:6])
    traces = list(iter_traces([path], defer=True))
    write_jsonl(path, requests[6:], append=True)
    assert [stream.decode_deferred(t) for t in traces] == [(t, []) for t in streamed([path])[0][:2]]


def test_a_file_changed_after_the_read_pass_is_an_input_error_when_a_line_is_decoded(tmp_path):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, _turns(2))
    first, second = [t for t in iter_traces([path], defer=True)]
    write_jsonl(path, _turns(2))  # rewritten in place: other traces, the same size
    with pytest.raises(InputError, match=f"{path}:2: the file changed while it was read"):
        stream.decode_deferred(first)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(InputError, match=f"{path}:4: the file changed while it was read"):
        stream.decode_deferred(second)
    path.unlink()
    with pytest.raises(InputError, match=f"{path}:4: cannot read file"):
        stream.decode_deferred(second)


def test_a_line_changed_after_the_read_pass_to_hold_another_trace_s_spans_is_an_input_error(
    tmp_path,
):
    requests = _turns(2)
    a, b = requests[0:3], requests[3:6]
    both = ExportTraceServiceRequest()  # two spans of trace a on one line
    both.resource_spans.extend([*a[1].resource_spans, *a[2].resource_spans])
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, [a[0], both, *b])
    first = next(iter_traces([path], defer=True))
    text = path.read_bytes()
    a_id, b_id = (r.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() for r in (a[0], b[0]))
    start = text.index(b"\n") + 1
    second = text.index(a_id.encode(), text.index(a_id.encode(), start) + 1)  # line 2's 2nd
    path.write_bytes(text[:second] + b_id.encode() + text[second + 32 :])  # same size
    with pytest.raises(InputError, match=f"{path}:2: spans of other traces"):
        stream.decode_deferred(first)


def test_a_line_linking_spans_of_its_own_trace_is_indexed_without_decoding(tmp_path):
    objs = _lines(_turns(2))
    spans = objs[1]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["links"] = [{"traceId": spans[0]["traceId"], "spanId": spans[0]["spanId"]}]
    path = tmp_path / "traces.jsonl"
    _write(path, objs)
    line = path.read_bytes().splitlines(keepends=True)[1]
    assert otlp_lines.predict(line) == (False, [spans[0]["traceId"]] * 2)
    assert streamed([path]) == reference([path])
    assert deferred([path]) == streamed([path])
