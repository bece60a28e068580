"""Print a recording's spans (attributes, events) and log records, trace by trace.

    .venv/bin/python tests/frameworks/dump.py tests/data/frameworks/SETUP [--width N] [--trace N]

Runs with the project's own venv (it reads the files with tracegrade's readers).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tracegrade.pipeline.reading import iter_raw_from_files


def _short(value: object, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if width <= 0 or len(text) <= width else text[:width] + "…"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("--width", type=int, default=300, help="0: no truncation")
    parser.add_argument("--trace", type=int, help="only the N-th trace (0-based)")
    args = parser.parse_args(argv)
    files = sorted(args.recording.glob("traces.*"))
    number = -1
    for batch in iter_raw_from_files(files):
        for trace in batch:
            number += 1
            if args.trace is not None and number != args.trace:
                continue
            spans = sorted(trace.spans, key=lambda s: s.start_unix_nano)
            names = {s.span_id: s.name for s in spans}
            print(
                f"=== trace {number} {trace.trace_id} ({len(spans)} spans, {len(trace.logs)} logs)"
            )
            for span in spans:
                parent = names.get(span.parent_span_id or "", "-")
                print(
                    f"SPAN {span.name!r} kind={span.kind} scope={span.scope_name} "
                    f"parent={parent!r} status={span.status_code} {span.status_message!r} "
                    f"{span.duration_ms:.1f}ms"
                )
                for key, value in span.attributes.items():
                    print(f"    {key} = {_short(value, args.width)}")
                for event in span.events:
                    print(f"    EVENT {event.name}: {_short(dict(event.attributes), args.width)}")
            for record in sorted(trace.logs, key=lambda r: r.sort_time):
                print(
                    f"LOG {record.event_name!r} span={names.get(record.span_id or '')!r} "
                    f"attrs={_short(dict(record.attributes), args.width)} "
                    f"body={_short(record.body, args.width)}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
