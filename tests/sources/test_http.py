"""The backends' HTTP: rate limits waited out as the backend asks, bounded; a failure names the
backend, path and status, never a credential."""

from __future__ import annotations

import httpx
import pytest

from tracegrade.errors import ConfigError
from tracegrade.sources import open_source
from tracegrade.sources.base import Settings, iso, unix_nano
from tracegrade.sources.http import MAX_WAIT_S, RETRIES, ApiClient, SourceError, retry_after_s


def _client(handler, waits: list[float]) -> ApiClient:
    settings = Settings("https://backend.invalid", {"Authorization": "Bearer s3cret"})
    return ApiClient(
        "Backend", settings, transport=httpx.MockTransport(handler), sleep=waits.append
    )


def test_retry_after_is_honoured_then_the_answer_read() -> None:
    answers = iter([httpx.Response(429, headers={"Retry-After": "3"}), httpx.Response(503)])
    waits: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == "Bearer s3cret"
        return next(answers, httpx.Response(200, json={"ok": True}))

    client = _client(handler, waits)
    assert client.get("/x") == {"ok": True}
    assert waits == [3.0, 2.0]  # Retry-After, then 2**1 without one
    assert client.requests == 3


def test_retries_are_bounded_and_the_error_hides_credentials() -> None:
    waits: list[float] = []
    client = _client(lambda r: httpx.Response(429, json={"message": "slow down"}), waits)
    with pytest.raises(SourceError) as raised:
        client.get("/api/things")
    message = str(raised.value)
    assert "429" in message and "/api/things" in message and "slow down" in message
    assert "s3cret" not in message
    assert Settings("https://user:pw@host:1/x").describe() == "https://host:1/x"
    assert len(waits) == RETRIES and max(waits) <= MAX_WAIT_S


def test_retry_after_as_a_date_and_capped() -> None:
    date = httpx.Response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"})
    assert retry_after_s(date, 0, now=1445412480.0) == 10.0
    assert retry_after_s(httpx.Response(429, headers={"Retry-After": "3600"}), 0) == MAX_WAIT_S


def test_missing_langfuse_keys_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    monkeypatch.delenv("LANGFUSE_SECRET_KEY", raising=False)
    with pytest.raises(ConfigError, match="LANGFUSE_PUBLIC_KEY"):
        open_source("langfuse")
    with pytest.raises(ConfigError, match="unknown source"):
        open_source("datadog")


def test_backend_settings_come_from_their_own_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", "http://phoenix.local:6006/v1/traces")
    monkeypatch.setenv("PHOENIX_API_KEY", "px-key")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.local")
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "ann")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw")
    phoenix, mlflow = open_source("phoenix"), open_source("mlflow")
    assert phoenix.settings.url == "http://phoenix.local:6006"
    assert phoenix.settings.headers["Authorization"] == "Bearer px-key"
    assert mlflow.settings.url == "https://mlflow.local"
    assert mlflow.settings.headers["Authorization"] == "Basic YW5uOnB3"
    assert open_source("tempo", "http://tempo:3200").settings.url == "http://tempo:3200"


def test_times_keep_nanoseconds() -> None:
    assert unix_nano("2026-11-28T17:26:34.281276123+00:00") == 1795886794281276123
    assert unix_nano("2026-11-28T17:26:34Z") == 1795886794000000000
    assert iso(1795886794281276123) == "2026-11-28T17:26:34.281276Z"


def test_an_answer_too_big_is_refused_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tracegrade.sources.http.MAX_RESPONSE_BYTES", 1000)
    client = _client(lambda r: httpx.Response(200, content=b"[" + b"1," * 600 + b"1]"), [])
    with pytest.raises(SourceError, match="more than"):
        client.get("/big")
    small = _client(lambda r: httpx.Response(200, json={"gzip": "decoded once"}), [])
    assert small.get("/small") == {"gzip": "decoded once"}


def test_a_gzip_answer_is_decoded_once() -> None:
    import gzip
    import json

    body = gzip.compress(json.dumps({"data": [1, 2]}).encode())
    client = _client(
        lambda r: httpx.Response(200, content=body, headers={"Content-Encoding": "gzip"}), []
    )
    assert client.get("/z") == {"data": [1, 2]}
