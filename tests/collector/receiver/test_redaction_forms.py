"""Every secret form of config/redaction.yaml, planted in every field that carries text, on
every path into the store: OTLP/gRPC, OTLP/HTTP (protobuf and JSON), ``tracegrade import``
(OTLP/JSON lines and chat transcripts) and ``tracegrade score FILE`` (whose run results
quote ungrounded values and tool arguments). The database files, ``tracegrade export`` and
the dashboard's pages are grepped for each secret.

Each place gets its own copy of the secrets (a place letter inside each), so a failure names
the form and the place it leaked from."""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

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
from tracegrade.web import UiConfig, create_app

PLACES = {
    "span_name": "a",
    "status_message": "b",
    "event_name": "c",
    "attribute": "d",
    "bytes_attribute": "e",
    "log_body": "f",
    "json_in_text": "g",
    "deep_json": "h",
    "prompt": "i",
    "tool_arguments": "j",
    "answer": "k",
}
"""Where the secrets are planted, each place with its letter."""

CARDS = {
    # Luhn-valid test card numbers, one per place (13-16 digits)
    "a": "4012888888881881",
    "b": "5555 5555 5555 4444",
    "c": "3782 822463 10005",
    "d": "6011-1111-1111-1117",
    "e": "4222222222222",
    "f": "5105105105105100",
    "g": "4000056655665556",
    "h": "2223003122003222",
    "i": "5200828282828210",
    "j": "6011000990139424",
    "k": "3714 496353 98431",
}


def _fill(letter: str, length: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    """A deterministic token of ``length`` characters that holds ``letter`` and the place."""
    body = (
        letter.upper()
        + letter
        + "Q7x"
        + "".join(alphabet[(i * 7) % len(alphabet)] for i in range(length))
    )
    return body[:length]


def secrets_of(letter: str) -> dict[str, tuple[str, str]]:
    """form -> (text to plant, the secret that must not be stored), for one place."""
    u = letter.upper()
    aws_secret = _fill(letter, 40, string.ascii_letters + string.digits + "/+")
    pem_body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _fill(letter, 32)
    azure = _fill(letter, 86, string.ascii_letters + string.digits + "+/")
    slack = _fill(letter, 24)
    return {
        "aws_access_key_id": (f"key id AKIA{u}{u}QWERTYUIOPASD1", f"AKIA{u}{u}QWERTYUIOPASD1"),
        "aws_secret_access_key": (f"AWS_SECRET_ACCESS_KEY={aws_secret}", aws_secret),
        "pem_private_key": (
            f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----",
            pem_body,
        ),
        "azure_account_key": (
            f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={azure}==;"
            "EndpointSuffix=core.windows.net",
            azure,
        ),
        "github_pat": (
            "github_pat_" + _fill(letter, 82, string.ascii_letters + string.digits + "_"),
        )
        * 2,
        "stripe_secret": ("sk_live_" + _fill(letter, 40),) * 2,
        "stripe_restricted": ("rk_live_" + _fill(letter, 40),) * 2,
        "slack_webhook": (
            f"https://hooks.slack.com/services/T0{u}BCDEF1/B0{u}BCDEF2/{slack}",
            slack,
        ),
        "url_password": (
            f"postgres://app:PgS3cret{letter}Pw0rd@db.internal:5432/app",
            f"PgS3cret{letter}Pw0rd",
        ),
        "card_number": (f"card {CARDS[letter]} on file", CARDS[letter]),
        "basic_auth": (
            f"Authorization: Basic dXNlcjpw{letter}YXNzd29yZDEyMzQ=",
            f"dXNlcjpw{letter}YXNzd29yZDEyMzQ=",
        ),
        "cookie_in_text": (
            f"Cookie: sessionid=SessCookie{letter}Value12345",
            f"SessCookie{letter}Value12345",
        ),
        "hugging_face": ("hf_" + _fill(letter, 34),) * 2,
        "sendgrid": ("SG." + _fill(letter, 22) + "." + _fill(letter, 43),) * 2,
        "google_oauth": ("ya29." + _fill(letter, 60),) * 2,
        "npm": ("npm_" + _fill(letter, 36),) * 2,
        "access_token_in_url": (
            f"https://api.example.com/cb?code=1&access_token=AccTok{letter}en987&x=1",
            f"AccTok{letter}en987",
        ),
        "openai": ("sk-proj-" + _fill(letter, 40),) * 2,
        "bearer_in_text": (
            f"curl -H 'Authorization: Bearer {_fill(letter, 30)}'",
            _fill(letter, 30),
        ),
        "github_classic": ("ghp_" + _fill(letter, 36),) * 2,
        "google_api_key": ("AIza" + _fill(letter, 35),) * 2,
        "slack_token": (f"xoxb-1234-{_fill(letter, 24)}", _fill(letter, 24)),
        "jwt": (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _fill(letter, 43),
            _fill(letter, 43),
        ),
        "json_client_secret": (
            f'{{"client_secret": "cs-planted-{letter}-value04"}}',
            f"cs-planted-{letter}-value04",
        ),
        "json_signing_secret": (
            f'{{"webhook": {{"signing_secret": "whsec-planted-{letter}-01"}}}}',
            f"whsec-planted-{letter}-01",
        ),
        "json_oauth_token": (
            f'{{"github_oauth_token": "oauth-planted-{letter}-02"}}',
            f"oauth-planted-{letter}-02",
        ),
        "json_x_auth_token": (
            f'{{"X-Auth-Token": "xauth-planted-{letter}-03"}}',
            f"xauth-planted-{letter}-03",
        ),
        "password_in_text": (
            f"login failed for bob, Password: PwPlanted{letter}x9!",
            f"PwPlanted{letter}x9!",
        ),
        "password_assignment": (
            f"connecting with db_password = 'PwAssign{letter}42' now",
            f"PwAssign{letter}42",
        ),
    }


def blob(letter: str) -> str:
    """Every form of one place, one per line, after some prose (JSON not at the start)."""
    lines = [f"Notes for place {letter}: keep-me-{letter}"]
    lines += [text for text, _ in secrets_of(letter).values()]
    return "\n".join(lines)


def deep_blob(letter: str) -> str:
    """The key forms inside JSON nested 1,500 levels deep."""
    inner = json.dumps({k: v for k, (_, v) in secrets_of(letter).items() if k.startswith("json_")})
    keyed = json.dumps({"client_secret": f"deep-{letter}", "auth": {"x_token": f"deep2-{letter}"}})
    return "result " + "[" * 1500 + keyed + "," + json.dumps(blob(letter)) + "]" * 1500 + inner


ATTRIBUTE_KEYS = {
    # key-based forms as attributes: key -> secret
    "webhook.signing_secret": "attr-signing-secret-01",
    "github.oauth_token": "attr-oauth-token-02",
    "http.request.header.x-auth-token": "attr-x-auth-token-03",
    "aws.secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYATTRKEY004",
    "AWS_SECRET_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYATTRKEY005",
    "cloud.aws.secretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYATTRKEY006",
}


def all_secrets() -> dict[str, str]:
    """name -> secret, for every form and place (and the key-based attributes)."""
    out = {
        f"{form}@{place}": secret
        for place, letter in PLACES.items()
        for form, (_, secret) in secrets_of(letter).items()
    }
    out |= {f"deep@{p}": f"deep-{PLACES['deep_json']}" for p in ("deep_json",)}
    out |= {f"deep2@{p}": f"deep2-{PLACES['deep_json']}" for p in ("deep_json",)}
    out |= {f"attribute_key:{k}": v for k, v in ATTRIBUTE_KEYS.items()}
    return out


KEPT = [f"keep-me-{letter}" for letter in PLACES.values() if letter not in "h"]


def _genai_span(trace_id: bytes, span_id: bytes, parent: bytes, name: str, attributes: dict):
    span = hand_span(name, trace_id, span_id, parent=parent, end=1_700_000_001_000_000_000)
    for key, value in attributes.items():
        span.attributes.add(key=key).value.CopyFrom(any_value(value))
    return span


def requests():
    """One trace (an agent turn: invoke_agent > chat > execute_tool) and one logs request
    carrying every form in every place."""
    t = os.urandom(16)
    root, chat, tool = os.urandom(8), os.urandom(8), os.urandom(8)
    agent = _genai_span(t, root, b"", blob("a"), {"gen_ai.operation.name": "invoke_agent"})
    agent.status.code = 2
    agent.status.message = blob("b")
    agent.events.add(name=blob("c"), time_unix_nano=1_700_000_000_500_000_000)
    agent.attributes.add(key="note").value.string_value = blob("d")
    agent.attributes.add(key="raw").value.bytes_value = blob("e").encode()
    agent.attributes.add(key="tool.output").value.string_value = blob("g")
    agent.attributes.add(key="deep").value.string_value = deep_blob("h")
    for key, value in ATTRIBUTE_KEYS.items():
        agent.attributes.add(key=key).value.string_value = value
    question = "What is my balance?"
    answer = f"Your balance is $1,234.56. {blob('k')}"
    chat_span = _genai_span(
        t,
        chat,
        root,
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": question}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
            ),
        },
    )
    tool_span = _genai_span(
        t,
        tool,
        root,
        "execute_tool lookup",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.arguments": json.dumps(
                {"url": secrets_of("j")["url_password"][0], "note": blob("j")}
            ),
            "gen_ai.tool.call.result": '{"balance": "1,234.56"}',
        },
    )
    traces = spans_request(agent, chat_span, tool_span)
    logs = logs_request(hand_log(blob("f"), trace_id=t, span_id=root))
    return traces, logs


def _receive(db: Path, protocol: str) -> None:
    traces, logs = requests()
    with running(db) as receiver:
        if protocol == "grpc":
            with GrpcClient(receiver.grpc_port) as client:
                client.export("traces", traces.SerializeToString())
                client.export("logs", logs.SerializeToString())
        for signal, request in (("traces", traces), ("logs", logs)):
            if protocol == "http":
                assert http_export(receiver, signal, request.SerializeToString()).status_code == 200
            elif protocol == "http-json":
                body = json.dumps(request_to_json(request)).encode()
                assert http_export(receiver, signal, body, content_type=JSON).status_code == 200


def _files(folder: Path) -> Path:
    traces, logs = requests()
    (folder / "traces.jsonl").write_text(json.dumps(request_to_json(traces)) + "\n")
    (folder / "logs.jsonl").write_text(json.dumps(request_to_json(logs)) + "\n")
    return folder / "traces.jsonl"


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert (
        result.exit_code in (0, 1, 2)
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    ), result.output
    return result.output


def _transcript(folder: Path) -> Path:
    path = folder / "chats.json"
    conversation = {
        "messages": [
            {"role": "system", "content": blob("a")},
            {"role": "user", "content": f"keep-me-i {blob('i')}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "lookup",
                            "arguments": json.dumps({"note": blob("j")}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": blob("g")},
            {"role": "assistant", "content": blob("k")},
        ]
    }
    path.write_text(json.dumps([conversation]))
    return path


DATASET = """cases:
  - id: balance
    input: What is my balance?
    expected_tools: [lookup]
    expected_tool_calls:
      - name: lookup
        arguments: {url: "https://bank.example.com/balance"}
        required: true
    must_contain: ["keep-me-k"]
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, bytes]:
    """Every byte each path wrote (the database and its WAL, the export, the pages, the
    --json output), by path."""
    out: dict[str, bytes] = {}
    for path in ("grpc", "http", "http-json", "import", "transcripts", "score-file"):
        folder = tmp_path_factory.mktemp(path)
        db = folder / "store.db"
        if path in ("grpc", "http", "http-json"):
            _receive(db, path)
        elif path == "import":
            _invoke("import", str(_files(folder)), "--db", str(db))
        elif path == "transcripts":
            _invoke("import", str(_transcript(folder)), "--db", str(db))
        else:
            (folder / "golden.yaml").write_text(DATASET)
            _invoke(
                "score",
                str(_files(folder)),
                "--dataset",
                str(folder / "golden.yaml"),
                "--db",
                str(db),
                "--json",
                str(folder / "run.json"),
            )
        if path != "score-file":
            _invoke("export", "--db", str(db), "--out", str(folder / "export.jsonl"))
        out[path] = b"".join(
            p.read_bytes()
            for p in sorted(folder.glob("*"))
            if p.name.startswith(("store.db", "export", "run.json"))
        )
        out[path] += _pages(db)
    return out


def _pages(db: Path) -> bytes:
    """The dashboard's pages over the store: traces, each trace, runs, each case result."""
    app = create_app(UiConfig(db=str(db)))
    pages: list[bytes] = []
    with TestClient(app, base_url="http://localhost") as client:
        traces = client.get("/traces.json").json()["traces"]
        pages.append(client.get("/traces").content)
        for trace in traces:
            for suffix in ("", ".json"):
                pages.append(client.get(f"/traces/{trace['trace_id']}{suffix}").content)
        for run in client.get("/runs.json").json()["runs"]:
            pages.append(client.get(f"/runs/{run['run_id']}").content)
            for suffix in ("", ".json"):
                pages.append(client.get(f"/runs/{run['run_id']}/cases/0{suffix}").content)
    app.state.ui.close()
    assert len(pages) >= 3
    return b"".join(pages)


PATHS = ["grpc", "http", "http-json", "import", "transcripts", "score-file"]


@pytest.mark.parametrize("path", PATHS)
def test_no_planted_secret_is_written_anywhere(written, path):
    leaked = [
        name
        for name, secret in all_secrets().items()
        if secret.encode() in written[path] or json.dumps(secret)[1:-1].encode() in written[path]
    ]
    assert not leaked, f"{len(leaked)} of {len(all_secrets())} secrets written: {leaked}"


@pytest.mark.parametrize("path", PATHS)
def test_the_text_around_the_secrets_is_kept(written, path):
    assert b"[REDACTED]" in written[path]
    if path != "score-file":
        assert any(text.encode() in written[path] for text in KEPT)
