"""A recorded model for the shop agent: ``python -m examples.ecommerce.replay [--port N]``.

An OpenAI-compatible endpoint (``POST /v1/chat/completions``, non-streaming, the Chat
Completions wire format the official ``openai`` client speaks) that answers each request with
the response recorded for it in ``examples/ecommerce/recorded/``, so the shop agent runs
through its whole golden dataset (``datasets/ecommerce/golden.yaml``) without an API key or a
network. It is what ``python -m examples.ecommerce.demo`` points the agent at
(``OPENAI_BASE_URL``); it is part of the example, never of tracegrade's scoring path.

What was recorded, honestly: the responses of the scripted model tracegrade's own tests use
for this agent (``tests/support/ecommerce_model.py``: it calls the tools a good model would
and writes its answers from the tool results; token counts are its fixed 25 in / 12 out per
call), captured while the agent ran every case in process
(``python -m tests.examples.record_replay`` writes the files; a test checks they are what it
records today). It is not a real LLM: the point is to see tracegrade at work on a real agent,
real OpenTelemetry instrumentation and real traces, for free. Two recordings:

- ``/v1`` (``recorded/good.jsonl``): the model as scripted;
- ``/invented-price/v1`` (``recorded/invented_price.jsonl``): the same, except that every final
  answer states its prices from memory, 10% below what the tools returned: a regression for
  ``tracegrade compare`` and ``--baseline`` to catch.

A request is looked up by :func:`request_key`: its messages (roles, contents, tool calls with
their arguments, tool results) and tool names, with tool-call ids numbered in order of
appearance (a model makes up new ids on every call). The model name is not part of the key.
A request that was not recorded (the agent, its prompt or the dataset changed) is answered
HTTP 400 with an OpenAI error body that says so; the client does not retry it.
"""

from __future__ import annotations

import hashlib
import json
import signal
from collections.abc import Iterable, Mapping
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click

RECORDED = Path(__file__).with_name("recorded")
"""The recordings, one JSON object a line: ``{"key", "messages", "response"}``."""
VARIANTS = {"": "good", "invented-price": "invented_price"}
"""URL prefix (before ``/v1``) -> recording name (``recorded/NAME.jsonl``)."""
_MAX_BODY_BYTES = 4_000_000


def canonical_messages(body: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The request's messages as the key sees them (see the module docstring), and the map
    from each tool-call id to its number (``call_1``, ``call_2`` ... in order of appearance)."""
    ids: dict[str, str] = {}

    def number(call_id: str) -> str:
        return ids.setdefault(call_id, f"call_{len(ids) + 1}")

    out = []
    for message in body.get("messages") or ():
        item: dict[str, Any] = {"role": message.get("role"), "content": message.get("content")}
        if message.get("tool_calls"):
            item["tool_calls"] = [
                {
                    "id": number(str(call.get("id"))),
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                }
                for call in message["tool_calls"]
            ]
        if message.get("tool_call_id"):
            item["tool_call_id"] = number(str(message["tool_call_id"]))
        out.append(item)
    return out, ids


def request_key(body: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) a request is recorded and replayed under (module docstring)."""
    messages, _ = canonical_messages(body)
    tools = sorted(str(t.get("function", {}).get("name")) for t in body.get("tools") or ())
    text = json.dumps({"messages": messages, "tools": tools}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def numbered_response(message: Mapping[str, Any], taken: int) -> dict[str, Any]:
    """``message`` (an assistant message) with its tool calls' ids numbered after the
    ``taken`` ids of the request, as the next request will number them."""
    out = dict(message)
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {**call, "id": f"call_{taken + i + 1}"} for i, call in enumerate(message["tool_calls"])
        ]
    return out


@lru_cache(maxsize=4)
def load_recording(name: str, folder: Path = RECORDED) -> dict[str, dict[str, Any]]:
    """Recording ``name`` (``good`` or ``invented_price``): key -> recorded response.

    Raises:
        FileNotFoundError: no such recording.
    """
    lines = (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    entries = (json.loads(line) for line in lines if line.strip())
    return {entry["key"]: entry["response"] for entry in entries}


def completion(key: str, response: Mapping[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` body of a recorded response (its id from the key, so a replay
    answers the same request the same way)."""
    usage = response["usage"]
    return {
        "id": f"chatcmpl-replay-{key[:24]}",
        "object": "chat.completion",
        "created": 1795132800,  # 2026-11-20, the shop's date (examples/ecommerce/seed.py)
        "model": response["model"],
        "choices": [
            {"index": 0, "message": response["message"], "finish_reason": response["finish_reason"]}
        ],
        "usage": {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
    }


def _variant(path: str) -> str | None:
    """The recording a request path asks for (``/v1/chat/completions``,
    ``/invented-price/v1/chat/completions``), None for any other path."""
    head, sep, tail = path.rstrip("/").rpartition("/v1/")
    if not sep or tail != "chat/completions":
        return None
    return VARIANTS.get(head.strip("/"))


def send_json(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    """Answer ``data`` (JSON) with ``status``; an error says not to retry (the openai client
    honours ``x-should-retry``: a missing recording does not appear on a second try)."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    if status >= 400:
        handler.send_header("x-should-retry", "false")
    handler.end_headers()
    handler.wfile.write(data)


class ReplayHandler(BaseHTTPRequestHandler):
    """One request: find its recording, answer the recorded completion or a 400 saying why."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ReplayServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Mapping[str, Any]) -> None:
        send_json(self, status, json.dumps(payload).encode())

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": {"message": message, "type": "replay", "code": status}})

    def do_POST(self) -> None:
        variant = _variant(self.path)
        if variant is None:
            routes = ", ".join(f"POST /{p + '/' if p else ''}v1/chat/completions" for p in VARIANTS)
            self._error(404, f"no route POST {self.path}; use {routes}")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY_BYTES:
            self._error(413, f"body over {_MAX_BODY_BYTES} bytes")
            return
        try:
            body = json.loads(self.rfile.read(length) or b"null")
            key = request_key(body)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self._error(400, f"not a Chat Completions request: {exc}")
            return
        response = self.server.recording(variant).get(key)
        if response is None:
            self._error(400, _unrecorded(body, variant))
            return
        self._send(200, completion(key, response))


def _unrecorded(body: Mapping[str, Any], variant: str) -> str:
    users = [m.get("content") for m in body.get("messages") or () if m.get("role") == "user"]
    last = str(users[-1] if users else "")[:120]
    return (
        f"no response recorded in examples/ecommerce/recorded/{variant}.jsonl for this request "
        f"(latest user message {last!r}): the recording covers the cases of "
        "datasets/ecommerce/golden.yaml with the shop agent as shipped; after changing either, "
        "re-record with `python -m examples.ecommerce.record --upstream URL` (a real model), "
        "or run the agent against a real model (OPENAI_API_KEY)"
    )


class ReplayServer(ThreadingHTTPServer):
    """The replay endpoint on ``host:port`` (0: a free port), reading ``folder``."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, folder: Path = RECORDED):
        super().__init__((host, port), ReplayHandler)
        self.host = host
        self.folder = folder

    def recording(self, name: str) -> dict[str, dict[str, Any]]:
        """The recording ``name`` (read once)."""
        return load_recording(name, self.folder)

    def base_url(self, variant: str = "good") -> str:
        """``http://host:port[/PREFIX]/v1`` for ``OPENAI_BASE_URL``."""
        prefix = next(p for p, name in VARIANTS.items() if name == variant)
        port = self.server_address[1]
        return f"http://{self.host}:{port}{'/' + prefix if prefix else ''}/v1"


def recorded_count(paths: Iterable[Path]) -> int:
    """How many responses the recordings at ``paths`` hold."""
    return sum(len(load_recording(p.stem, p.parent)) for p in paths)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(0)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8090, show_default=True, type=click.IntRange(0, 65535))
def main(host: str, port: int) -> None:
    """Serve the recorded model (see the module docstring) until Ctrl-C."""
    server = ReplayServer(host, port)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    count = recorded_count(sorted(RECORDED.glob("*.jsonl")))
    click.echo(f"replaying {count} recorded responses on {server.base_url()}", err=False)
    click.echo(f"regressed model (prices from memory): {server.base_url('invented_price')}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
