"""Re-record the demo's model: ``python -m examples.ecommerce.record --upstream URL``.

Runs the shop agent through its golden dataset (``tracegrade run datasets/ecommerce/golden.yaml
--agent examples.ecommerce.agent:answer --no-save --no-judge``, every case, in process) with
``OPENAI_BASE_URL`` pointed at a recording proxy in front of ``--upstream`` (any
OpenAI-compatible endpoint: ``https://api.openai.com/v1``, a vLLM or Ollama server ...; its key
from ``OPENAI_API_KEY``, the model from ``--model``), and writes every request's response to
``examples/ecommerce/recorded/VARIANT.jsonl``, which :mod:`examples.ecommerce.replay` serves.
Two passes, one per recording:

- ``good``: the model's responses as they came;
- ``invented_price``: the same model, except that the proxy lowers every dollar amount of a
  final answer (one without tool calls) by 10% before the agent sees it, a made-up price
  stated from memory; later turns of a conversation carry that answer to the model.

One JSON object a line, in reading order (by conversation, then step): ``{"key"`` (the
request's :func:`~examples.ecommerce.replay.request_key`), ``"messages"`` (the request
without its system prompt, for reading), ``"response": {"model", "message",
"finish_reason", "usage": {"prompt_tokens", "completion_tokens"}}}``; tool-call ids are
numbered (``call_1`` ...) as the key numbers them, and the agent is answered with exactly the
completion the replay will give, so a replay retraces the recording step by step.

The files are replaced only when a pass ends with the run complete (exit 0, or 1 for failed
cases) and no upstream error; otherwise nothing is written and the command exits 1 saying
why. The shipped recording was made against tracegrade's scripted test model
(``python -m tests.examples.record_replay``); re-record after changing the agent (prompt,
tools, seed data) or the golden dataset.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click
import httpx

from examples.ecommerce.replay import (
    RECORDED,
    canonical_messages,
    completion,
    request_key,
    send_json,
)

REPO = Path(__file__).resolve().parents[2]
GOLDEN = "datasets/ecommerce/golden.yaml"
AGENT = "examples.ecommerce.agent:answer"
PRICE = re.compile(r"\$(\d[\d,]*\.\d\d)")
"""A dollar amount as the agent states prices (``$1,299.00``)."""
_MAX_BODY_BYTES = 4_000_000


def invent_prices(answer: str) -> str:
    """``answer`` with every dollar amount 10% lower (``$100.00`` -> ``$90.00``)."""
    return PRICE.sub(lambda m: f"${float(m.group(1).replace(',', '')) * 0.9:,.2f}", answer)


def recorded_message(message: Mapping[str, Any], taken: int, regress: bool) -> dict[str, Any]:
    """An upstream assistant message as recorded: role, content, tool calls (their ids
    numbered after the request's ``taken`` ids); prices lowered when ``regress`` and final."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = [
            {
                "id": f"call_{taken + i + 1}",
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                },
            }
            for i, call in enumerate(calls)
        ]
    elif regress and isinstance(out["content"], str):
        out["content"] = invent_prices(out["content"])
    return out


class RecordingProxy(ThreadingHTTPServer):
    """``POST /v1/chat/completions`` forwarded to ``upstream``, each response noted in
    ``entries`` (key -> line) and answered as the replay will; ``errors`` lists upstream
    failures (they are passed on to the agent)."""

    daemon_threads = True

    def __init__(self, upstream: str, api_key: str, regress: bool) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.upstream = upstream.rstrip("/")
        self.client = httpx.Client(
            timeout=httpx.Timeout(300.0), headers={"Authorization": f"Bearer {api_key}"}
        )
        self.regress = regress
        self.entries: dict[str, dict[str, Any]] = {}
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` for ``OPENAI_BASE_URL``."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def record(self, body: Mapping[str, Any], upstream: Mapping[str, Any]) -> dict[str, Any]:
        """Note the upstream completion for ``body``; the completion to answer with."""
        messages, ids = canonical_messages(body)
        choice = upstream["choices"][0]
        message = recorded_message(choice["message"], len(ids), self.regress)
        usage = upstream.get("usage") or {}
        response = {
            "model": upstream.get("model") or body.get("model"),
            "message": message,
            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            "usage": {
                "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                "completion_tokens": int(usage.get("completion_tokens") or 0),
            },
        }
        key = request_key(body)
        shown = [m for m in messages if m["role"] != "system"]
        with self.lock:
            self.entries[key] = {"key": key, "messages": shown, "response": response}
        return completion(key, response)


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RecordingProxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, data: bytes) -> None:
        send_json(self, status, data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if self.path.rstrip("/") != "/v1/chat/completions" or length > _MAX_BODY_BYTES:
            self._send(404, b'{"error": {"message": "POST /v1/chat/completions only"}}')
            return
        url = f"{self.server.upstream}/chat/completions"
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            reply = self.server.client.post(url, json=body)
            if reply.status_code != 200:
                raise ValueError(f"HTTP {reply.status_code}: {reply.text[:300]}")
            answer = self.server.record(body, reply.json())
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            with self.server.lock:
                self.server.errors.append(f"{url}: {exc}")
            self._send(502, json.dumps({"error": {"message": f"upstream: {exc}"}}).encode())
            return
        self._send(200, json.dumps(answer).encode())


def _reading_order(entry: Mapping[str, Any]) -> tuple[str, int, str]:
    """By conversation (its first user message), then step by step."""
    users = [m["content"] for m in entry["messages"] if m["role"] == "user"]
    return (str(users[0] if users else ""), len(entry["messages"]), entry["key"])


def _write(path: Path, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Replace ``path`` atomically with ``entries`` in reading order."""
    ordered = sorted(entries.values(), key=_reading_order)
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in ordered)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def record(upstream: str, api_key: str, model: str, regress: bool, out: Path) -> int:
    """One pass (see the module docstring) into ``out``; the number of responses written.

    Raises:
        click.ClickException: the run did not complete or the upstream failed; ``out`` kept.
    """
    with RecordingProxy(upstream, api_key, regress) as proxy:
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        env = {**os.environ, "OPENAI_BASE_URL": proxy.base_url(), "OPENAI_MODEL": model}
        env["OPENAI_API_KEY"] = "the-proxy-holds-the-key"
        command = [sys.executable, "-m", "tracegrade", "run", GOLDEN, "--agent", AGENT]
        command += ["--no-save", "--no-judge", "--concurrency", "4"]
        code = subprocess.run(command, env=env, cwd=REPO, check=False).returncode
        proxy.shutdown()
    if proxy.errors or code not in (0, 1):
        shown = "\n  ".join(proxy.errors[:5]) or f"tracegrade run exited {code}"
        raise click.ClickException(f"nothing written to {out}: {shown}")
    _write(out, proxy.entries)
    return len(proxy.entries)


@click.command()
@click.option("--upstream", required=True, help="OpenAI-compatible base URL (ends in /v1).")
@click.option("--model", envvar="OPENAI_MODEL", default="gpt-4o-mini", show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=RECORDED,
    show_default=True,
    help="Folder for good.jsonl and invented_price.jsonl.",
)
def main(upstream: str, model: str, out: Path) -> None:
    """Record the demo's model responses from UPSTREAM (see the module docstring)."""
    api_key = os.environ.get("OPENAI_API_KEY", "")
    for name, regress in (("good", False), ("invented_price", True)):
        click.secho(f"recording {name} from {upstream} ({model}) ...", bold=True)
        count = record(upstream, api_key, model, regress, out / f"{name}.jsonl")
        click.echo(f"{name}: {count} responses written to {out / f'{name}.jsonl'}")


if __name__ == "__main__":
    main()
