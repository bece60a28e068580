"""Print the spans and log records of a scenario output dir (needs opentelemetry-proto).

python tests/harness/otlp_dump.py OUT_DIR [--full]
"""

from __future__ import annotations

import sys
from pathlib import Path


def _value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value
    return getattr(v, kind) if kind else None


def attrs(kvs) -> dict:
    return {kv.key: _value(kv.value) for kv in kvs}


def load_traces(out_dir: str | Path):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    req.ParseFromString((Path(out_dir) / "traces.binpb").read_bytes())
    return req


def load_logs(out_dir: str | Path):
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    path = Path(out_dir) / "logs.binpb"
    if not path.exists():
        return None
    req = ExportLogsServiceRequest()
    req.ParseFromString(path.read_bytes())
    return req


def iter_spans(req):
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield ss.scope, span


def main(argv: list[str]) -> int:
    out, full = argv[0], "--full" in argv
    width = None if full else 160
    req = load_traces(out)
    spans = sorted(iter_spans(req), key=lambda p: p[1].start_time_unix_nano)
    ids = {s.span_id: s.name for _, s in spans}
    for scope, span in spans:
        parent = ids.get(span.parent_span_id, "-" if not span.parent_span_id else "?")
        print(
            f"SPAN {span.name!r} kind={span.kind} scope={scope.name} parent={parent!r} "
            f"status={span.status.code}"
        )
        for k, v in attrs(span.attributes).items():
            text = repr(v)
            print(f"    {k} = {text if width is None else text[:width]}")
    logs = load_logs(out)
    if logs is not None:
        for rl in logs.resource_logs:
            for sl in rl.scope_logs:
                for rec in sl.log_records:
                    body = _value(rec.body)
                    text = repr(body)
                    print(
                        f"LOG event_name={rec.event_name!r} scope={sl.scope.name} "
                        f"span={ids.get(rec.span_id)!r} attrs={attrs(rec.attributes)} "
                        f"body={text if width is None else text[:width]}"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
