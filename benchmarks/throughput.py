"""Throughput of reading, normalising, storing and scoring, on the tau-bench import.

    python benchmarks/throughput.py [--repeat 3] [--limit N] [--json]

Stages, each timed as the median of ``--repeat`` runs on the same input:

- ``baseline``: ``json.loads`` of every line of the OTLP/JSON file: the floor any reader of
  this file pays; every other stage is reported as a ratio to it, measured in the same run,
  so figures compare across machines;
- ``transcripts``: tau-bench transcripts -> OTLP requests (the import path);
- ``read``: the OTLP/JSON file -> protobuf requests (opentelemetry-proto's ``ParseDict``),
  as ``import`` reads it;
- ``stream``: the OTLP/JSON file -> whole traces of spans, as ``score``/``inspect`` read it
  (:mod:`tracegrade.otlp.stream`: orjson, spans built from the dicts, two passes);
- ``decode``: protobuf -> :class:`~tracegrade.spans.Span`;
- ``normalize``: spans -> :class:`~tracegrade.trace.AgentTrace`;
- ``store``: spans into a fresh SQLite store, and ``load``: back out, decoded;
- ``score``: every built-in (deterministic) scorer against the converted golden dataset,
  extraction caches cleared before each repeat (a cold run: only what one run reuses, such
  as the dataset's shared system prompt, is cached);
- ``normalize:<variant>``: read + normalise each tau-bench-otlp variant (real
  instrumentations' output).

Throughput is spans/s and traces/s of each stage alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402
from benchmarks.tau_bench.convert import convert, trace_request  # noqa: E402
from tracegrade.config import load_config  # noqa: E402
from tracegrade.dataset import load_dataset  # noqa: E402
from tracegrade.normalize import normalize_all, normalize_trace  # noqa: E402
from tracegrade.otlp.files import ReadOptions, read_paths  # noqa: E402
from tracegrade.otlp.stream import iter_traces  # noqa: E402
from tracegrade.scoring import build_scorers, evaluate, values  # noqa: E402
from tracegrade.store.traces import Store  # noqa: E402

TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
OTLP = ROOT / "datasets" / "tau-bench-otlp"


def timed(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time in seconds over ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _row(stage: str, seconds: float, spans: int, traces: int, baseline: float) -> dict[str, Any]:
    return {
        "stage": stage,
        "seconds": round(seconds, 4),
        "spans_per_s": round(spans / seconds) if seconds else None,
        "traces_per_s": round(traces / seconds, 1) if seconds else None,
        "x_baseline": round(seconds / baseline, 2) if baseline else None,
    }


def run(repeat: int, limit: int | None) -> list[dict[str, Any]]:
    records = json.loads(TAU.read_text())[:limit]
    work = Path(tempfile.mkdtemp(prefix="tracegrade-bench-"))
    subset = work / "trajectories.json"
    subset.write_text(json.dumps(records))
    convert(subset, work)
    lines = (work / "traces.jsonl").read_text().splitlines()
    baseline, _ = timed(lambda: [json.loads(line) for line in lines], repeat)
    t_transcripts, _ = timed(lambda: [trace_request(r) for r in records], repeat)
    t_read, payloads = timed(lambda: read_paths([work / "traces.jsonl"], ReadOptions()), repeat)
    t_stream, _ = timed(lambda: list(iter_traces([work / "traces.jsonl"])), repeat)
    t_decode, spans = timed(payloads.spans, repeat)
    t_norm, traces = timed(lambda: normalize_all(spans), repeat)
    n_spans, n_traces = len(spans), len(traces)

    def store_once() -> Store:
        store = Store(work / f"bench-{time.perf_counter_ns()}.db")
        for request in payloads.traces:
            store.add_traces(request)
        return store

    t_store, store = timed(store_once, repeat)
    ids = store.trace_ids()
    t_load, _ = timed(lambda: [normalize_trace(t) for t in store.load(ids)], repeat)
    store.close()
    config = load_config()
    dataset = load_dataset(work / "dataset.yaml")
    scorers = build_scorers(config, with_plugins=False)

    def score_cold() -> Any:
        values.clear_caches()
        return evaluate(traces, dataset, scorers, config)

    t_score, _ = timed(score_cold, repeat)
    rows = [
        _row("baseline (json.loads)", baseline, n_spans, n_traces, baseline),
        _row("transcripts -> OTLP", t_transcripts, n_spans, n_traces, baseline),
        _row("read OTLP/JSON", t_read, n_spans, n_traces, baseline),
        _row("decode spans", t_decode, n_spans, n_traces, baseline),
        _row("stream OTLP/JSON -> traces of spans", t_stream, n_spans, n_traces, baseline),
        _row("normalize", t_norm, n_spans, n_traces, baseline),
        _row("store write", t_store, n_spans, n_traces, baseline),
        _row("store load + normalize", t_load, n_spans, n_traces, baseline),
        _row("score (all built-in scorers)", t_score, n_spans, n_traces, baseline),
    ]
    for variant in sorted(p.name for p in OTLP.iterdir() if p.is_dir()):
        files = [OTLP / variant / "traces.jsonl.gz"]
        t_variant, result = timed(lambda files=files: read_paths(files), repeat)
        variant_spans = result.spans()
        t_variant_norm, normalized = timed(
            lambda spans=variant_spans, result=result: normalize_all(spans, result.log_records()),
            repeat,
        )
        rows.append(
            _row(f"read {variant}", t_variant, len(variant_spans), len(normalized), baseline)
        )
        rows.append(
            _row(
                f"normalize {variant}",
                t_variant_norm,
                len(variant_spans),
                len(normalized),
                baseline,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--limit", type=int, default=None, help="first N tau-bench trajectories (default: all 100)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return report(run(args.repeat, args.limit), args.json, _table)


def _table(rows: list[dict[str, Any]]) -> None:
    print(f"{'stage':<38}{'seconds':>9}{'spans/s':>10}{'traces/s':>10}{'x json.loads':>14}")
    for row in rows:
        print(
            f"{row['stage']:<38}{row['seconds']:>9.3f}{row['spans_per_s'] or 0:>10}"
            f"{row['traces_per_s'] or 0:>10}{row['x_baseline']:>14}"
        )


if __name__ == "__main__":
    sys.exit(main())
