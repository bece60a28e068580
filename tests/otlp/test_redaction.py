"""The redaction rules (config/redaction.yaml) and the Redactor's one-pass prefilter."""

from __future__ import annotations

import json

import pytest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.errors import ConfigError
from tracegrade.otlp.redaction import REDACTED, Redactor, default_rules


def test_the_shipped_rules_load_and_cover_the_issue_15_keys():
    redactor = Redactor()
    for key in ("Authorization", "x-goog-api-key", "api_token", "password", "OPENAI_API_KEY"):
        assert redactor.matches(key), key
    for key in ("passwordless", "api_key_id_hint", "tokens", "gen_ai.usage.input_tokens"):
        assert not redactor.matches(key), key
    assert default_rules().values


def test_ordinary_traffic_is_not_walked():
    body = trace_request(agent_turn).SerializeToString()
    assert not Redactor().may_apply(body)


@pytest.mark.parametrize(
    "planted",
    [b"AUTHORIZATION", b"x-goog-api-key", b"sk-" + b"a" * 24, b"Bearer abcdefghijklmnopq"],
)
def test_the_prefilter_sees_keys_in_any_case_and_secrets_by_form(planted):
    body = trace_request(agent_turn).SerializeToString() + planted
    assert Redactor().may_apply(body)


def test_json_text_keeps_its_other_content_and_secrets_by_form_go_anywhere():
    redactor = Redactor()
    text = json.dumps({"q": "x", "nested": [{"Api_Key": "k1"}], "note": "sk-" + "b" * 30})
    assert json.loads(redactor.text(text)) == {
        "q": "x",
        "nested": [{"Api_Key": REDACTED}],
        "note": REDACTED,
    }
    assert redactor.text("plain words, no secret") == "plain words, no secret"
    assert redactor.text("{not json but password") == "{not json but password"


def test_no_rules_redacts_nothing():
    redactor = Redactor(keys=(), values=())
    assert not redactor.active and not redactor.may_apply(b"authorization sk-" + b"c" * 30)


def test_a_bad_value_pattern_is_a_config_error():
    with pytest.raises(ConfigError, match="value pattern"):
        Redactor(values=["(unclosed"])


@pytest.mark.parametrize("offset", range(40, 70, 3))
def test_the_prefilter_finds_a_key_wherever_it_falls_across_its_scan_windows(offset, monkeypatch):
    """The body is lower-cased a window at a time (no copy of a whole 16 MiB body): windows
    overlap, so a literal across a window's end is still found; filler alone is not."""
    monkeypatch.setattr(Redactor, "SCAN_WINDOW_BYTES", 64)
    filler = b"q" * 200
    redactor = Redactor()
    assert not redactor.may_apply(filler)
    body = filler[:offset] + b"X-GOOG-API-KEY" + filler[offset:]
    assert redactor.may_apply(body)


# --- round two: forms, fields, JSON anywhere, run documents -------------------------------------


def test_the_new_key_rules_and_their_near_misses():
    redactor = Redactor()
    for key in ("client_secret", "aws_secret", "github.oauth_token", "X-Auth-Token", "csrf_token"):
        assert redactor.matches(key), key
    for key in ("gen_ai.usage.input_tokens", "max_tokens", "secretary", "token_count"):
        assert not redactor.matches(key), key


def test_token_counts_do_not_make_ordinary_traffic_a_candidate():
    body = trace_request(agent_turn).SerializeToString()
    assert b"tokens" in body and not Redactor().may_apply(body)
    assert Redactor().may_apply(body + b"\n\x0bgithub_token\x12\x03\n\x01x")
    assert Redactor().may_apply(b'{"key":"refresh_token","value":{}}', "json")


@pytest.mark.parametrize(
    "text",
    [
        'Tool said: {"client_secret": "S1", "q": "keep"} then more',
        '{"args": "{\\"client_secret\\": \\"S1\\", \\"q\\": \\"keep\\"}"}',
        "[" * 3000 + '{"client_secret": "S1", "q": "keep"}' + "]" * 3000,
        'x {"client_secret": {"value": "S1", "n": [1, "S1"]}, "q": "keep"}',
        'x {"client_secret": 12345678, "q": "keep"}',
    ],
    ids=["mid-string", "escaped", "3000-deep", "object-value", "number-value"],
)
def test_json_keys_are_redacted_wherever_the_json_is(text):
    redacted = Redactor().text(text.replace("12345678", "S1"))
    assert "S1" not in redacted and "keep" in redacted and REDACTED in redacted


def test_span_names_status_events_and_bytes_are_redacted():
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.name = "call with sk-" + "a" * 30
    span.status.message = "failed: Authorization: Basic dXNlcjpwYXNz"
    span.events.add(name="ghp_" + "b" * 36)
    span.attributes.add(key="raw").value.bytes_value = b"\xff hf_" + b"c" * 34
    assert Redactor().request(request) == 4
    assert span.name == f"call with {REDACTED}" and "dXNlcjpwYXNz" not in span.status.message
    assert span.events[0].name == REDACTED
    assert span.attributes[0].value.bytes_value == b"\xff " + REDACTED.encode()


def test_a_trace_read_from_a_file_is_returned_as_is_without_secrets():
    from tracegrade.otlp.codec import spans_from_request
    from tracegrade.spans import group_by_trace

    (trace,) = group_by_trace(spans_from_request(trace_request(agent_turn)))
    assert Redactor().trace(trace) is trace


def test_run_documents_are_redacted_case_by_case():
    from tracegrade.pipeline.outputs import redacted_cases
    from tracegrade.report.caselog import CaseList
    from tracegrade.run_document import CaseEntry

    secret = ["ungrounded: 4012888888881881", "url postgres://u:PwPw9@h/d"]
    plain = CaseEntry(passed=True, score=0.9090909090909092, reasons=["fine"])
    leaked = CaseEntry(passed=False, reasons=secret, metadata={"password": "hunter2"})
    with redacted_cases(CaseList([plain, leaked]), Redactor()) as cases:
        kept, redacted = list(cases)
    assert kept == plain  # a score's 16 digits are no card number: the entry is as it was
    assert "4012888888881881" not in str(redacted) and "PwPw9" not in str(redacted)
    assert redacted.metadata == {"password": "[REDACTED]"}


def test_an_unknown_detect_secrets_plugin_is_a_config_error():
    from tracegrade.otlp.redaction import plugin_patterns

    assert plugin_patterns("StripeDetector")
    with pytest.raises(ConfigError, match="NoSuchDetector"):
        plugin_patterns("NoSuchDetector")


@pytest.mark.parametrize("where", ["start", "end"])
def test_a_secret_in_replayed_histories_is_found_when_the_prefilter_scans_each_once(where):
    """Each LLM span replays the conversation so far: the prefilter scans a history that a
    longer one extends only for its end. A secret early in the conversation (in every
    history) or at the very end of a shorter one is still found, and redacted."""
    from tests.support.spanfactory import TraceBuilder

    secret = "AKIA" + "Q" * 16
    turns = ["x" * 700, "y" * 700, "z" * 700]
    if where == "start":
        turns[0] = f"my key is {secret} " + turns[0]
    else:
        turns[1] = turns[1] + f" {secret}"
    b = TraceBuilder()
    for n in range(1, 4):
        history = [{"role": "user", "content": text} for text in turns[:n]]
        b.add("chat", {"gen_ai.input.messages": json.dumps(history)}, start_ms=n, duration_ms=1)
    (redacted,) = [Redactor().trace(b.data())]
    values = [s.attributes["gen_ai.input.messages"] for s in redacted.spans]
    assert all(secret not in v for v in values) and any(REDACTED in v for v in values)
