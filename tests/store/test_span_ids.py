"""The writer's cache of stored span ids is bounded by span ids, not only by traces (a few
huge traces could otherwise hold it without limit), and a forgotten trace is still counted
once: its span ids are read back from the store."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.store.traces import Store


def _split(request: ExportTraceServiceRequest, keep: slice) -> ExportTraceServiceRequest:
    """The same request with only ``keep`` of its (one) scope's spans: another grouping."""
    part = ExportTraceServiceRequest()
    part.CopyFrom(request)
    spans = part.resource_spans[0].scope_spans[0].spans
    kept = list(spans)[keep]
    del spans[:]
    spans.extend(kept)
    return part


def _span_count(store: Store, request: ExportTraceServiceRequest) -> int:
    trace_id = request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
    row = store.db.execute("SELECT span_count FROM traces WHERE trace_id = ?", (trace_id,))
    return int(next(iter(row))[0])


def test_the_cache_holds_at_most_its_span_ids_and_counts_stay_unique(tmp_path):
    requests = [trace_request(lambda t, i=i: agent_turn(t, f"q{i}")) for i in range(12)]
    spans_per_trace = len(requests[0].resource_spans[0].scope_spans[0].spans)
    assert spans_per_trace >= 3
    with Store(str(tmp_path / "s.db")) as store:
        cache = store._span_ids
        cache.max_span_ids = 2 * spans_per_trace
        for request in requests:
            store.write([_split(request, slice(0, 2))])  # first two spans of each trace
            assert cache.cached_span_ids <= cache.max_span_ids
        assert cache.cached_span_ids == sum(len(ids) for ids in cache._cache.values())
        assert len(cache._cache) < len(requests)
        for request in requests:  # the whole trace again: only its new spans count
            store.write([request])
            assert cache.cached_span_ids <= cache.max_span_ids
        assert [_span_count(store, r) for r in requests] == [spans_per_trace] * len(requests)
