"""zstd-compressed trace files, as the OpenTelemetry Collector's file exporter writes them
(``compression: zstd``): each export a zstd frame after its 4-byte length (JSON or proto), or
one zstd stream (its native compression). Read wherever gzip is (``read_file``, the streaming
reader behind ``score`` / ``inspect``, ``import``), with the same decompression-bomb bound
and the same bound on JSON objects per decoded MiB."""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from tracegrade.cli import cli
from tracegrade.otlp.codec import parse_traces_json, parse_traces_protobuf
from tracegrade.otlp.files import (
    GZIP_FLOOR_BYTES,
    MAX_OBJECTS_PER_MIB,
    OBJECT_FLOOR,
    OBJECTS_PER_COMPRESSED_BYTE,
    ZstdBombError,
    read_file,
    read_paths,
    unzstd,
    write_jsonl,
)
from tracegrade.pipeline.reading import iter_from_files

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp" / "otel_genai_default"


def _lines(name: str) -> list[bytes]:
    return gzip.decompress((TAU / name).read_bytes()).splitlines()


def _records(messages: list[bytes]) -> bytes:
    """The Collector's ``compression: zstd`` framing: each export compressed on its own, after
    its 4-byte big-endian length."""
    compressor = zstandard.ZstdCompressor()
    frames = [compressor.compress(message) for message in messages]
    return b"".join(struct.pack(">I", len(frame)) + frame for frame in frames)


@pytest.fixture(scope="module")
def expected() -> dict[str, int]:
    """Spans and log records of the recorded tau-bench conversations, read from gzip."""
    payloads = read_paths([TAU / "traces.jsonl.gz"])
    return {"spans": len(payloads.spans()), "logs": len(payloads.log_records())}


def _counts(path: Path) -> dict[str, int]:
    payloads = read_paths([path])
    assert payloads.errors == []
    return {"spans": len(payloads.spans()), "logs": len(payloads.log_records())}


def test_collector_json_records_read_like_gzip(tmp_path, expected):
    (tmp_path / "traces.jsonl.zst").write_bytes(_records(_lines("traces.jsonl.gz")))
    (tmp_path / "logs.jsonl.zst").write_bytes(_records(_lines("logs.jsonl.gz")))
    assert _counts(tmp_path / "traces.jsonl.zst") == expected


def test_collector_proto_records_read_like_gzip(tmp_path, expected):
    protos = [
        parse_traces_json(json.loads(line)).SerializeToString()
        for line in _lines("traces.jsonl.gz")
    ]
    path = tmp_path / "traces.binpb.zst"
    path.write_bytes(_records(protos))
    payloads = read_file(path)
    assert payloads.errors == [] and payloads.formats == {str(path): "otlp-protobuf"}
    assert len(payloads.spans()) == expected["spans"]
    assert parse_traces_protobuf(protos[0]).resource_spans  # the frames hold real requests


def test_one_zstd_stream_of_several_frames_reads_like_gzip(tmp_path, expected):
    lines = b"\n".join(_lines("traces.jsonl.gz")) + b"\n"
    half = len(lines) // 2
    cut = lines.index(b"\n", half) + 1  # two frames, as a Collector flushing twice writes
    compressor = zstandard.ZstdCompressor()
    path = tmp_path / "traces.jsonl.zst"
    path.write_bytes(compressor.compress(lines[:cut]) + compressor.compress(lines[cut:]))
    assert read_file(path).errors == []
    assert len(read_file(path).spans()) == expected["spans"]


def test_score_and_inspect_stream_zstd_files(tmp_path):
    path = tmp_path / "traces.jsonl.zst"
    path.write_bytes(_records(_lines("traces.jsonl.gz")))
    streamed = [t for batch in iter_from_files([path]) for t in batch]
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b"\n".join(_lines("traces.jsonl.gz")) + b"\n")
    assert [t.to_dict() for t in streamed] == [
        t.to_dict() for batch in iter_from_files([plain]) for t in batch
    ]
    ran = CliRunner().invoke(cli, ["inspect", str(path), "--json", "--limit", "1"])
    assert ran.exit_code == 0, ran.output


def test_import_reads_zstd_and_writes_it(tmp_path):
    source = tmp_path / "traces.jsonl.zst"
    source.write_bytes(_records(_lines("traces.jsonl.gz")))
    db = str(tmp_path / "z.db")
    ran = CliRunner().invoke(cli, ["import", str(source), "--db", db])
    assert ran.exit_code == 0, ran.output
    out = tmp_path / "out.jsonl.zst"
    requests = [parse_traces_json(json.loads(line)) for line in _lines("traces.jsonl.gz")[:3]]
    write_jsonl(out, requests)
    assert out.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert len(read_file(out).traces) == 3


def test_a_truncated_record_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "traces.jsonl.zst"
    path.write_bytes(_records(_lines("traces.jsonl.gz"))[:-100])
    errors = read_file(path).errors
    assert len(errors) == 1 and "truncated" in str(errors[0])


def _bomb(tmp_path: Path, framed: bool, mib: int = 200) -> Path:
    """``mib`` MiB of spaces in ~1 MiB frames (a few dozen bytes each once compressed)."""
    frame = zstandard.ZstdCompressor(level=19).compress(b" " * 2**20)
    path = tmp_path / "bomb.jsonl.zst"
    body = struct.pack(">I", len(frame)) + frame if framed else frame
    path.write_bytes(body * mib)
    return path


@pytest.mark.parametrize("framed", [False, True], ids=["stream", "records"])
def test_a_zstd_bomb_is_refused_without_being_expanded(tmp_path, framed):
    path = _bomb(tmp_path, framed)
    assert path.stat().st_size < 100_000
    payloads = read_paths([path])
    assert not payloads.traces and "decompression bomb" in str(payloads.errors[0])
    ran = subprocess.run(
        [sys.executable, "-m", "tracegrade", "score", str(path), "--no-save"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 2 and "decompression bomb" in ran.stderr, ran.stderr[-500:]


def test_zstd_within_the_ratio_reads_and_past_it_is_refused():
    assert unzstd(zstandard.ZstdCompressor().compress(b"x" * 1000)) == b"x" * 1000
    with pytest.raises(ZstdBombError):
        unzstd(zstandard.ZstdCompressor().compress(b" " * (GZIP_FLOOR_BYTES + 1)))


def _dense(kind: str) -> bytes:
    """~3 MiB of OTLP/JSON that is all objects: empty resources, or one span of empty
    attributes (the amplification attacks of issue 40: a few KiB compressed)."""
    if kind == "resources":
        return b'{"resourceSpans":[' + b",".join([b"{}"] * 1_000_000) + b"]}\n"
    attributes = b",".join([b'{"key":"","value":{}}'] * 150_000)
    span = b'{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"s",'
    span += b'"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[' + attributes + b"]}"
    return b'{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + b"]}]}]}\n"


@pytest.mark.parametrize("compress", ["zstd", "zstd-records", "gzip"])
@pytest.mark.parametrize("kind", ["resources", "attributes"])
def test_a_file_decoding_to_objects_past_the_density_bound_is_refused(tmp_path, compress, kind):
    data = _dense(kind)
    if compress == "gzip":
        packed = gzip.compress(data)
    else:
        packed = zstandard.ZstdCompressor().compress(data)
        if compress == "zstd-records":
            packed = struct.pack(">I", len(packed)) + packed
    path = tmp_path / f"dense.jsonl.{'gz' if compress == 'gzip' else 'zst'}"
    path.write_bytes(packed)
    assert len(packed) < 20_000 < len(data)
    payloads = read_paths([path])
    assert not payloads.traces and "JSON objects per MiB" in str(payloads.errors[0])
    db = tmp_path / "t.db"
    result = CliRunner().invoke(cli, ["import", "--db", str(db), str(path)])
    assert result.exit_code == 2 and "amplification" in result.output, result.output


def test_objects_past_the_bound_per_compressed_byte_are_refused_at_any_density(tmp_path):
    """Attributes of 33 bytes (under the per-MiB bound) in 8 MiB: half a million objects from
    a few KiB of zstd (8 s of ``import`` without the bound)."""
    attribute = b'{"key":"aaaaaaaaaaaa","value":{}}'
    assert len(attribute) * MAX_OBJECTS_PER_MIB > 2 * 2**20
    packed = zstandard.ZstdCompressor().compress(
        b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":['
        + b",".join([attribute] * 250_000)
        + b"]}]}]}]}\n"
    )
    path = tmp_path / "wide.jsonl.zst"
    path.write_bytes(packed)
    assert OBJECT_FLOOR < 500_000 and len(packed) * OBJECTS_PER_COMPRESSED_BYTE < OBJECT_FLOOR
    payloads = read_paths([path])
    assert not payloads.traces and "per compressed byte" in str(payloads.errors[0])


@pytest.mark.parametrize("level", [3, 19])
def test_real_trace_files_are_far_below_the_object_bounds(level):
    data = gzip.decompress((TAU / "traces.jsonl.gz").read_bytes())
    packed = zstandard.ZstdCompressor(level=level).compress(data)
    assert data.count(b"{") * 2**20 / len(data) < MAX_OBJECTS_PER_MIB / 2
    assert data.count(b"{") < OBJECTS_PER_COMPRESSED_BYTE * len(packed) / 4
    assert unzstd(packed) == data
