"""Trace files: format detection, gzip, Collector JSON lines and protobuf framings, bad lines."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest

from tracegrade.otlp.codec import parse_traces_json
from tracegrade.otlp.files import (
    GZIP_FLOOR_BYTES,
    GzipBombError,
    Payloads,
    ReadOptions,
    gunzip,
    read_file,
    read_paths,
    split_protobuf_stream,
    write_jsonl,
    write_protobuf,
)

from .test_codec import otlp_json

DATASETS = Path(__file__).parents[2] / "datasets"


def _request(span_id: str):
    return parse_traces_json(otlp_json(spanId=span_id))


def test_jsonl_round_trip_with_gzip(tmp_path):
    path = tmp_path / "traces.jsonl.gz"
    assert write_jsonl(path, [_request("0000000000000001"), _request("0000000000000002")]) == 2
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    payloads = read_file(path)
    assert payloads.errors == [] and payloads.formats == {str(path): "otlp-json"}
    assert [s.span_id for s in payloads.spans()] == ["0000000000000001", "0000000000000002"]


def test_bad_line_is_reported_with_file_and_line_and_others_load(tmp_path):
    good = json.dumps(otlp_json())
    bad_id = json.dumps(otlp_json(spanId="nothex"))
    path = tmp_path / "traces.jsonl"
    path.write_text(
        "\n".join(
            [
                good,
                '{"resourceSpans": [',
                bad_id,
                good.replace('"eee19b7ec3c1b174"', '"eee19b7ec3c1b175"'),
                '{"something": 1}',
            ]
        )
        + "\n"
    )
    payloads = read_file(path)
    assert len(payloads.spans()) == 2
    messages = [str(e) for e in payloads.errors]
    assert messages[0].startswith(f"{path}:2: invalid JSON")
    assert messages[1].startswith(f"{path}:3: ") and "spanId 'nothex'" in messages[1]
    assert messages[2].startswith(f"{path}:5: not an OTLP request")
    assert [e.line for e in payloads.errors] == [2, 3, 5]


def test_truncated_gzip_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "traces.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"resourceSpans": []}\n' * 50)[:-20])
    payloads = read_file(path)
    assert payloads.spans() == [] and "cannot read file" in str(payloads.errors[0])


@pytest.mark.parametrize("framing", ["single", "fixed32", "varint"])
def test_protobuf_framings(tmp_path, framing):
    requests = [_request("0000000000000001"), _request("0000000000000002")]
    blobs = [r.SerializeToString() for r in requests]
    if framing == "single":
        data, expected = blobs[0], ["0000000000000001"]
    elif framing == "fixed32":
        data, expected = (
            b"".join(struct.pack(">I", len(b)) + b for b in blobs),
            ["0000000000000001", "0000000000000002"],
        )
    else:
        from google.protobuf.internal.encoder import _VarintBytes

        data, expected = (
            b"".join(_VarintBytes(len(b)) + b for b in blobs),
            ["0000000000000001", "0000000000000002"],
        )
    path = tmp_path / "traces.binpb"
    path.write_bytes(data)
    payloads = read_file(path)
    assert payloads.errors == [] and [s.span_id for s in payloads.spans()] == expected


def test_collector_proto_writer_round_trip(tmp_path):
    path = tmp_path / "out.binpb"
    write_protobuf(path, [_request("0000000000000001"), _request("0000000000000003")])
    assert len(split_protobuf_stream(path.read_bytes())) == 2
    assert [s.span_id for s in read_file(path).spans()] == ["0000000000000001", "0000000000000003"]


def test_logs_protobuf_is_told_apart_from_traces(tmp_path):
    from tracegrade.otlp.codec import parse_logs_json

    logs = parse_logs_json(
        {
            "resourceLogs": [
                {
                    "scopeLogs": [
                        {
                            "logRecords": [
                                {
                                    "traceId": "5b8efff798038103d269b633813fc60c",
                                    "spanId": "eee19b7ec3c1b174",
                                    "timeUnixNano": "7",
                                    "eventName": "gen_ai.choice",
                                }
                            ]
                        }
                    ]
                }
            ]
        }
    )
    path = tmp_path / "export.pb"
    path.write_bytes(logs.SerializeToString())
    payloads = read_file(path)
    assert payloads.spans() == [] and [r.event_name for r in payloads.log_records()] == [
        "gen_ai.choice"
    ]


def test_traces_file_brings_its_logs_sibling():
    payloads = read_paths([DATASETS / "tau-bench-otlp" / "otel_genai_default" / "traces.jsonl.gz"])
    assert len(payloads.formats) == 2
    assert len(payloads.log_records()) == 4132 and len(payloads.spans()) == 439


def test_directory_expands_to_trace_files():
    payloads = read_paths([DATASETS / "tau-bench-otlp" / "otel_genai_default"])
    assert len(payloads.spans()) == 439 and len(payloads.log_records()) == 4132


def test_missing_path_is_an_input_error(tmp_path):
    from tracegrade.errors import InputError

    with pytest.raises(InputError, match="no such file"):
        read_paths([tmp_path / "nope.jsonl"])


def test_transcript_jsonl_bad_record_names_line(tmp_path):
    path = tmp_path / "chats.jsonl"
    path.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi"}]})
        + "\n"
        + json.dumps({"messages": [{"content": "no role"}]})
        + "\n"
    )
    payloads = read_file(path, ReadOptions())
    assert len(payloads.traces) == 1
    assert str(payloads.errors[0]) == f"{path}:2: message 1 has no string 'role'"


def test_transcript_json_list_bad_record_names_record(tmp_path):
    path = tmp_path / "chats.json"
    path.write_text(json.dumps([{"traj": [{"role": "user", "content": "hi"}]}, {"traj": "oops"}]))
    payloads = read_file(path, ReadOptions(messages_key="traj"))
    assert len(payloads.traces) == 1 and "record 2: no message list under 'traj'" in str(
        payloads.errors[0]
    )


def test_10_15_a_text_file_is_read_as_lines_and_each_bad_line_is_named(tmp_path):
    """Issue 10 item 15: non-JSON text is not taken for protobuf ("Wire format was corrupt");
    every bad line is reported as file:line, and a JSON line among them still loads."""
    path = tmp_path / "notes.txt"
    path.write_text("first note\n\n" + json.dumps(otlp_json()) + "\nlast note\n")
    payloads = read_file(path)
    assert len(payloads.spans()) == 1
    assert [
        (e.line, str(e).startswith(f"{path}:{e.line}: text line, not JSON"))
        for e in payloads.errors
    ] == [
        (1, True),
        (4, True),
    ]


def test_10_15_a_long_text_file_reports_its_first_lines_then_a_count(tmp_path):
    path = tmp_path / "app.log"
    path.write_text("".join(f"INFO request {n} done\n" for n in range(25)))
    errors = read_file(path).errors
    assert [e.line for e in errors] == [*range(1, 11), None]
    assert read_file(path).formats == {str(path): "text"}
    assert str(errors[-1]).startswith(f"{path}: 15 more line(s) that are not JSON")


def test_10_15_binary_that_is_not_utf8_is_still_read_as_protobuf(tmp_path):
    path = tmp_path / "traces.bin"
    path.write_bytes(b"\x0a\xff\xfe garbage")
    payloads = read_file(path)
    assert payloads.formats == {str(path): "otlp-protobuf"} and payloads.errors


# --- hostile files: a deep line is reported and skipped, a gzip bomb refused -------------------


def _hostile_lines(tmp_path: Path) -> tuple[Path, list[str]]:
    """A Collector file: a good line, a line nested 100,000 deep, a good line."""
    from tests.support.sdk import agent_turn, trace_request
    from tracegrade.otlp.codec import request_to_json

    good = [json.dumps(request_to_json(trace_request(agent_turn))) for _ in range(2)]
    deep = '{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = tmp_path / "traces.jsonl"
    path.write_text(f"{good[0]}\n{deep}\n{good[1]}\n")
    return path, good


def test_a_deeply_nested_line_is_reported_and_the_others_load(tmp_path: Path) -> None:
    from tracegrade.otlp.stream import iter_traces

    path, _ = _hostile_lines(tmp_path)
    payloads = read_paths([path])
    assert len(payloads.traces) == 2
    assert [(e.line, "nested too deeply" in str(e)) for e in payloads.errors] == [(2, True)]
    sink = Payloads()
    assert len(list(iter_traces([path], ReadOptions(), sink))) == 2
    assert [e.line for e in sink.errors] == [2]


def test_import_inspect_and_score_skip_a_deep_line_without_a_traceback(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tracegrade.cli import cli

    path, _ = _hostile_lines(tmp_path)
    for args in (["import", str(path)], ["inspect", str(path)], ["score", str(path)]):
        result = CliRunner().invoke(cli, [*args, "--db", str(tmp_path / "s.db")])
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        assert f"{path}:2:" in result.output and "nested too deeply" in result.output, args
        assert "Traceback" not in result.output
    assert (
        "imported 6 new span(s)"
        in CliRunner().invoke(cli, ["import", str(path), "--db", str(tmp_path / "t.db")]).output
    )


def _bomb(tmp_path: Path, mib: int = 200) -> Path:
    """A multi-member gzip file of ``mib`` MiB of spaces: ~1 KB a member."""
    member = gzip.compress(b" " * 2**20, compresslevel=9)
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(member * mib)
    return path


def test_a_gzip_bomb_is_refused_without_being_expanded(tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    path = _bomb(tmp_path)
    assert path.stat().st_size < 1_000_000
    payloads = read_paths([path])
    assert not payloads.traces and "decompression bomb" in str(payloads.errors[0])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    ran = subprocess.run(
        [sys.executable, "-m", "tracegrade", "import", str(path), "--db", str(tmp_path / "b.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 2 and "decompression bomb" in ran.stderr
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert before / 1024 > 200 or peak_mib < 250  # 200 MiB expanded took it to ~600 MiB


def test_a_gzip_file_within_the_ratio_reads_as_before(tmp_path: Path) -> None:
    assert gunzip(gzip.compress(b"x" * 1000)) == b"x" * 1000
    with pytest.raises(GzipBombError):
        gunzip(gzip.compress(b" " * (GZIP_FLOOR_BYTES + 1)))
