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
