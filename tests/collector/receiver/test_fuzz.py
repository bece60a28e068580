"""Fuzzing the receiver's decoders (hypothesis, bounded budget): random bytes, random JSON and
mutations of valid SDK-encoded payloads, protobuf and OTLP/JSON, traces, logs and metrics.

Whatever the input, :func:`tracegrade.collector.admission.admit` either returns an
``Admitted`` that keeps its promises (only valid items kept and counted, rejections
explained, matching attributes redacted) or raises ``OtlpDecodeError``; nothing else. Over
HTTP, mutated payloads never get a 5xx.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource

from tests.support.receiver import JSON, PROTOBUF, http_export, running
from tests.support.sdk import agent_turn, trace_request
from tracegrade.collector.admission import (
    REDACTED,
    Admitted,
    Redactor,
    admit,
    decode,
    log_problem,
    span_problem,
)
from tracegrade.errors import OtlpDecodeError
from tracegrade.otlp.codec import request_to_json

EXAMPLES = int(os.environ.get("TRACEGRADE_FUZZ_EXAMPLES", "200"))
"""Examples per fuzz test (raise it to hunt for bugs; 200 keeps the file near 10 s)."""
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
REDACTOR = Redactor()
SIGNALS = ("traces", "logs", "metrics")


def _logs_request() -> Any:
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(
        resource=Resource.create({"service.name": "fuzz", "openai.api_key": "sk-1"})
    )
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("fuzz")
    logger.emit(
        body={"k": [1, 2.5, "x"]}, attributes={"authorization": "Bearer t", "n": 1}, event_name="e"
    )
    logger.emit(body="text", attributes={"http.request.header.cookie": ["a=b"]})
    provider.shutdown()
    return encode_logs(memory.get_finished_logs())


TRACES = trace_request(
    lambda t: agent_turn(t, attributes={"authorization": "Bearer secret", "openai.api_key": "k"}),
    resource={"service.name": "fuzz", "tracegrade.run_id": "r1"},
)
LOGS = _logs_request()
VALID = {
    ("traces", "protobuf"): TRACES.SerializeToString(),
    ("logs", "protobuf"): LOGS.SerializeToString(),
    ("traces", "json"): json.dumps(request_to_json(TRACES)).encode(),
    ("logs", "json"): json.dumps(request_to_json(LOGS)).encode(),
}


def _items(request: Any, signal: str) -> list[Any]:
    if signal == "traces":
        return [s for g in request.resource_spans for sc in g.scope_spans for s in sc.spans]
    return [r for g in request.resource_logs for sc in g.scope_logs for r in sc.log_records]


def _attribute_lists(request: Any, signal: str) -> list[Any]:
    groups = request.resource_spans if signal == "traces" else request.resource_logs
    lists = [g.resource.attributes for g in groups]
    for group in groups:
        for scoped in group.scope_spans if signal == "traces" else group.scope_logs:
            lists.append(scoped.scope.attributes)
    for item in _items(request, signal):
        lists.append(item.attributes)
        lists.extend(
            nested.attributes
            for nested in (*getattr(item, "events", ()), *getattr(item, "links", ()))
        )
    return lists


def check_admission(signal: str, body: bytes, encoding: str) -> Admitted | None:
    """Admit ``body`` and check the result's promises; None when it was refused as
    malformed (``OtlpDecodeError``, with a message). Any other exception fails the test."""
    try:
        admitted = admit(signal, body, encoding, REDACTOR)
    except OtlpDecodeError as exc:
        assert str(exc)
        return None
    assert isinstance(admitted, Admitted) and admitted.size == len(body)
    if signal == "metrics":
        assert admitted.items == 0
        return admitted
    items = _items(admitted.request, signal)
    problem = span_problem if signal == "traces" else log_problem
    assert admitted.items == len(items) and all(problem(item) is None for item in items)
    assert admitted.rejected >= 0 and (admitted.rejected == 0) == (admitted.message == "")
    for attributes in _attribute_lists(admitted.request, signal):
        for kv in attributes:
            if REDACTOR.matches(kv.key):
                assert kv.value.string_value == REDACTED, kv.key
    return admitted


@st.composite
def mutated(draw: st.DrawFn, valid: bytes) -> bytes:
    """``valid`` with a few random edits: flipped, inserted, deleted or duplicated bytes, or
    a truncation."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, max(len(data) - 1, 0)))
        edit = draw(st.sampled_from(["flip", "set", "insert", "delete", "duplicate", "truncate"]))
        if edit == "flip" and data:
            data[where] ^= 1 << draw(st.integers(0, 7))
        elif edit == "set" and data:
            data[where] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=8))
        elif edit == "delete":
            del data[where : where + draw(st.integers(1, 16))]
        elif edit == "duplicate":
            size = draw(st.integers(1, 32))
            data[where:where] = data[where : where + size]
        else:
            del data[where:]
    return bytes(data)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(
        ["", "00" * 16, "00" * 8, "ab" * 16, "ab" * 8, "AAAAAAAAAAAAAAAAAAAAAA==", "1e3", "-1"]
    ),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "name",
                    "attributes",
                    "key",
                    "value",
                    "stringValue",
                    "intValue",
                    "arrayValue",
                    "kvlistValue",
                    "values",
                    "events",
                    "links",
                    "body",
                    "kind",
                    "startTimeUnixNano",
                    "timeUnixNano",
                    "status",
                    "code",
                    "resource",
                    "scopeSpans",
                    "scopeLogs",
                    "logRecords",
                    "spans",
                    "resourceSpans",
                    "resourceLogs",
                    "x",
                ]
            )
            | st.text(max_size=6),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@st.composite
def json_mutated(draw: st.DrawFn, valid: bytes) -> bytes:
    """The valid OTLP/JSON document with one node replaced by a random JSON value, or one
    key deleted."""
    document = json.loads(valid)
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        children = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for key, child in children:
            paths.append((node, key))
            walk(child)

    walk(document)
    parent, key = draw(st.sampled_from(paths))
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[key]
    else:
        parent[key] = draw(JSON_VALUES)
    return json.dumps(document).encode()


@FUZZ
@given(signal=st.sampled_from(SIGNALS), body=st.binary(max_size=512))
def test_random_bytes_as_protobuf_decode_or_raise_otlp_decode_error(signal, body):
    check_admission(signal, body, "protobuf")


@FUZZ
@given(
    signal=st.sampled_from(["traces", "logs"]),
    body=st.binary(max_size=256) | st.text(max_size=64).map(str.encode),
)
def test_random_bytes_as_json_decode_or_raise_otlp_decode_error(signal, body):
    check_admission(signal, body, "json")


@FUZZ
@given(signal=st.sampled_from(["traces", "logs"]), document=JSON_VALUES)
def test_random_json_documents_decode_or_raise_otlp_decode_error(signal, document):
    check_admission(signal, json.dumps(document).encode(), "json")


@FUZZ
@given(
    document=st.dictionaries(
        st.sampled_from(["resourceMetrics", "resource_metrics", "x"]), JSON_VALUES, max_size=3
    )
)
def test_random_json_objects_as_metrics_decode_or_raise_otlp_decode_error(document):
    check_admission("metrics", json.dumps(document).encode(), "json")


@pytest.mark.parametrize("body", [b"null", b"0", b"true"])
def test_metrics_json_that_is_not_an_object_is_an_otlp_decode_error(body):
    with pytest.raises(OtlpDecodeError):
        admit("metrics", body, "json")


@FUZZ
@given(data=st.data(), signal=st.sampled_from(["traces", "logs"]))
def test_mutated_sdk_protobuf_decodes_or_raises_otlp_decode_error(data, signal):
    check_admission(signal, data.draw(mutated(VALID[(signal, "protobuf")])), "protobuf")


@FUZZ
@given(data=st.data(), signal=st.sampled_from(["traces", "logs"]))
def test_mutated_otlp_json_decodes_or_raises_otlp_decode_error(data, signal):
    valid = VALID[(signal, "json")]
    body = data.draw(mutated(valid) if data.draw(st.booleans()) else json_mutated(valid))
    check_admission(signal, body, "json")


@pytest.mark.parametrize("signal, encoding", sorted(VALID))
def test_the_unmutated_payloads_are_admitted_whole_and_redacted(signal, encoding):
    admitted = check_admission(signal, VALID[(signal, encoding)], encoding)
    assert admitted is not None and admitted.rejected == 0
    assert (
        admitted.items
        == len(_items(decode(signal, VALID[(signal, encoding)], encoding), signal))
        > 0
    )
    assert REDACTED.encode() in admitted.request.SerializeToString()


@pytest.fixture(scope="module")
def fuzz_receiver(tmp_path_factory):
    with running(
        tmp_path_factory.mktemp("fuzz") / "fuzz.db", max_request_bytes=16 * 1024
    ) as receiver:
        yield receiver


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), key=st.sampled_from(sorted(VALID)))
def test_mutated_payloads_over_http_never_get_a_server_error(fuzz_receiver, data, key):
    signal, encoding = key
    body = data.draw(mutated(VALID[key]))
    response = http_export(
        fuzz_receiver, signal, body, content_type=PROTOBUF if encoding == "protobuf" else JSON
    )
    assert response.status_code in (200, 400), response.text
