"""Planted secrets never reach the disk, on every path into the store: OTLP/gRPC, OTLP/HTTP
(protobuf and JSON) and ``tracegrade import``. One test per planted secret and path; the
text around a secret (a prompt, a tool's other arguments) is kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.receiver import (
    JSON,
    GrpcClient,
    hand_log,
    hand_span,
    http_export,
    logs_request,
    running,
    spans_request,
)
from tracegrade.cli import cli
from tracegrade.otlp.codec import any_value, request_to_json

PLANTED = {
    # name: (where it is planted, the secret text that must not be stored)
    "authorization": ("span", "Bearer tok-plain-authorization-0001"),
    "nested_map_authorization": ("span", "Basic c2VjcmV0LW5lc3RlZC1tYXA="),
    "log_body_map_authorization": ("log", "Basic bG9nLWJvZHktc2VjcmV0"),
    "log_body_json_authorization": ("log", "Digest log-json-secret-0003"),
    "x_goog_api_key": ("span", "AIzaSyA-plantedGoogleKey0000000000000000"),
    "api_token": ("span", "tok_planted_api_token_0004"),
    "password": ("span", "hunter2-planted-password"),
    "resource_openai_api_key": ("resource", "plain-resource-key-0005"),
    "sk_in_prompt": ("span", "sk-proj-PlantedPromptKey000000000000000"),
    "sk_in_tool_arguments": ("span", "sk-ant-api03-PlantedToolArgKey00000000"),
    "api_key_in_tool_arguments": ("span", "plain-json-key-0006"),
    "bearer_in_text": ("span", "abcdefghijklmnop0123456789"),
    "github_token_in_event": ("event", "ghp_" + "P" * 36),
    "secret_in_array": ("span", "sk-" + "A" * 32),
    "password_in_log_attribute": ("log", "log-attr-password-0007"),
}
KEPT = ["What is my order status?", '"q":"order 42"', "tools.search", "keep-me"]
"""Text around the secrets that must survive."""


def requests():
    """One trace request and one logs request carrying every planted secret."""
    s = {name: secret for name, (_, secret) in PLANTED.items()}
    span = hand_span("tools.search", os.urandom(16), os.urandom(8))
    attributes = {
        "authorization": s["authorization"],
        "http.request.headers": {"Authorization": s["nested_map_authorization"], "x": "keep-me"},
        "x-goog-api-key": s["x_goog_api_key"],
        "api_token": s["api_token"],
        "password": s["password"],
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "content": f"What is my order status? key {s['sk_in_prompt']}"}]
        ),
        "gen_ai.tool.call.arguments": json.dumps(
            {
                "q": "order 42",
                "api_key": s["api_key_in_tool_arguments"],
                "auth": {"token": s["sk_in_tool_arguments"]},
            },
            separators=(",", ":"),
        ),
        "command": f"curl -H 'Authorization: Bearer {s['bearer_in_text']}' https://x",
        "list": ["keep-me", s["secret_in_array"]],
    }
    for key, value in attributes.items():
        span.attributes.add(key=key).value.CopyFrom(any_value(value))
    event = span.events.add(name="exception")
    event.attributes.add(
        key="exception.message"
    ).value.string_value = f"push failed with {s['github_token_in_event']}"
    traces = spans_request(span)
    traces.resource_spans[0].resource.attributes.add(key="OPENAI_API_KEY").value.string_value = s[
        "resource_openai_api_key"
    ]
    record = hand_log("placeholder")
    record.body.CopyFrom(any_value({"authorization": s["log_body_map_authorization"]}))
    second = hand_log(json.dumps({"headers": {"Authorization": s["log_body_json_authorization"]}}))
    second.attributes.add(key="db.password").value.string_value = s["password_in_log_attribute"]
    return traces, logs_request(record, second)


def _receive(db: Path, protocol: str) -> None:
    traces, logs = requests()
    with running(db) as receiver:
        if protocol == "grpc":
            with GrpcClient(receiver.grpc_port) as client:
                client.export("traces", traces.SerializeToString())
                client.export("logs", logs.SerializeToString())
        for signal, request in (("traces", traces), ("logs", logs)):
            if protocol == "http":
                body = request.SerializeToString()
                assert http_export(receiver, signal, body).status_code == 200
            elif protocol == "http-json":
                body = json.dumps(request_to_json(request)).encode()
                assert http_export(receiver, signal, body, content_type=JSON).status_code == 200


def _import(db: Path) -> None:
    traces, logs = requests()
    folder = db.parent / "files"
    folder.mkdir()
    (folder / "traces.jsonl").write_text(json.dumps(request_to_json(traces)) + "\n")
    (folder / "logs.jsonl").write_text(json.dumps(request_to_json(logs)) + "\n")
    result = CliRunner().invoke(cli, ["import", str(folder / "traces.jsonl"), "--db", str(db)])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def disk(tmp_path_factory) -> dict[str, bytes]:
    """Every byte each path wrote (the database and its WAL), by path."""
    out = {}
    for path in ("grpc", "http", "http-json", "import"):
        db = tmp_path_factory.mktemp(path) / "store.db"
        _import(db) if path == "import" else _receive(db, path)
        out[path] = b"".join(p.read_bytes() for p in db.parent.glob("store.db*"))
    return out


@pytest.mark.parametrize("path", ["grpc", "http", "http-json", "import"])
@pytest.mark.parametrize("plant", sorted(PLANTED))
def test_a_planted_secret_is_not_stored(disk, path, plant):
    _, secret = PLANTED[plant]
    assert secret.encode() not in disk[path]


@pytest.mark.parametrize("path", ["grpc", "http", "http-json", "import"])
def test_the_text_around_the_secrets_is_kept(disk, path):
    for text in KEPT:
        assert text.encode() in disk[path], text
    assert b"[REDACTED]" in disk[path]
