"""Read VCR.py cassettes of OpenAI chat-completions traffic.

Only the standard library and PyYAML are needed, so this module can be imported
both by the main test environment and inside every harness virtualenv (where
``scenario.py`` uses it to decide which tool spans to emit).

Cassette facts this module copes with:

* response bodies are either plain text, ``!!binary`` gzip data (header
  ``Content-Encoding: gzip``) or a server-sent-event stream (``data: {...}``
  lines ending with ``data: [DONE]``);
* request bodies are JSON strings (sometimes pretty-printed, sometimes compact);
* header names vary in case and values are usually lists;
* some cassettes hold several recordings of the same test appended one after
  the other, so a later request does not necessarily extend the previous one.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


@dataclass
class Interaction:
    index: int
    method: str
    uri: str
    request_body: Any  # parsed JSON (dict) when possible, else str / None
    status: int
    reason: str
    content_type: str
    body: bytes  # decoded (gunzipped) response body, served verbatim
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def is_sse(self) -> bool:
        return self.content_type.split(";")[0].strip().lower() == "text/event-stream"

    @property
    def path(self) -> str:
        # "https://api.openai.com/v1/chat/completions?x=y" -> "/v1/chat/completions"
        rest = self.uri.split("://", 1)[-1]
        path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        return path.split("?", 1)[0]


def _header(headers: dict[str, Any] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name.lower():
            if isinstance(value, list):
                return str(value[0]) if value else None
            return str(value)
    return None


def _decode_body(raw: Any, encoding: str | None) -> bytes:
    if raw is None:
        return b""
    data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    enc = (encoding or "").lower()
    if "gzip" in enc or data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif "deflate" in enc:
        data = zlib.decompress(data)
    return data


def _parse_request_body(raw: Any) -> Any:
    if raw is None:
        return None
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = _decode_body(raw, None).decode("utf-8")
        except (UnicodeDecodeError, OSError):
            return None
    if isinstance(raw, dict):  # some vcrpy versions store {"string": ...}
        raw = raw.get("string")
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


def load_interactions(path: str | Path) -> list[Interaction]:
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    out: list[Interaction] = []
    for i, item in enumerate(doc.get("interactions") or []):
        req = item.get("request") or {}
        resp = item.get("response") or {}
        rheaders = resp.get("headers") or {}
        body = resp.get("body")
        raw = body.get("string") if isinstance(body, dict) else body
        status = resp.get("status") or {}
        content_type = _header(rheaders, "content-type") or "application/json"
        out.append(
            Interaction(
                index=i,
                method=str(req.get("method") or "POST").upper(),
                uri=str(req.get("uri") or ""),
                request_body=_parse_request_body(req.get("body")),
                status=int(status.get("code", 200)),
                reason=str(status.get("message", "OK")),
                content_type=content_type,
                body=_decode_body(raw, _header(rheaders, "content-encoding")),
                headers={
                    k: (str(v[0]) if isinstance(v, list) and v else str(v))
                    for k, v in rheaders.items()
                },
            )
        )
    return out


# ---------------------------------------------------------------- responses


def iter_sse_data(body: bytes):
    """Yield the parsed JSON payload of every ``data:`` event (stops at [DONE])."""
    for line in body.decode("utf-8").splitlines():
        line = line.strip()
        if not line.startswith("data:"):
            continue
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            return
        if payload:
            yield json.loads(payload)


def reassemble_stream(chunks) -> dict:
    """Turn ``chat.completion.chunk`` objects (dicts) into one ``chat.completion`` dict."""
    result: dict[str, Any] = {"object": "chat.completion", "choices": [], "usage": None}
    choices: dict[int, dict] = {}
    for chunk in chunks:
        for key in ("id", "model", "created", "system_fingerprint"):
            if chunk.get(key) is not None:
                result[key] = chunk[key]
        if chunk.get("usage"):
            result["usage"] = chunk["usage"]
        for ch in chunk.get("choices") or []:
            idx = ch.get("index", 0)
            acc = choices.setdefault(
                idx,
                {
                    "index": idx,
                    "message": {"role": "assistant", "content": None},
                    "finish_reason": None,
                    "_tool_calls": {},
                },
            )
            delta = ch.get("delta") or {}
            if delta.get("role"):
                acc["message"]["role"] = delta["role"]
            if delta.get("content") is not None:
                acc["message"]["content"] = (acc["message"]["content"] or "") + delta["content"]
            if delta.get("refusal") is not None:
                acc["message"]["refusal"] = (acc["message"].get("refusal") or "") + delta["refusal"]
            for tc in delta.get("tool_calls") or []:
                slot = acc["_tool_calls"].setdefault(
                    tc.get("index", 0),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if tc.get("id"):
                    slot["id"] = tc["id"]
                if tc.get("type"):
                    slot["type"] = tc["type"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    slot["function"]["name"] += fn["name"]
                if fn.get("arguments"):
                    slot["function"]["arguments"] += fn["arguments"]
            if ch.get("finish_reason") is not None:
                acc["finish_reason"] = ch["finish_reason"]
    for idx in sorted(choices):
        acc = choices[idx]
        tcs = acc.pop("_tool_calls")
        if tcs:
            acc["message"]["tool_calls"] = [tcs[k] for k in sorted(tcs)]
        result["choices"].append(acc)
    return result


def response_completion(inter: Interaction) -> dict | None:
    """The recorded response as a ``chat.completion`` dict (SSE streams reassembled)."""
    if inter.is_sse:
        return reassemble_stream(iter_sse_data(inter.body))
    try:
        data = json.loads(inter.body.decode("utf-8"))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _message_text(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        texts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "".join(texts) if texts else None
    return str(content)


def _parse_args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def tool_results_in(request_body: Any) -> dict[str, str | None]:
    """``{tool_call_id: content}`` for every ``tool`` role message of a request body."""
    out: dict[str, str | None] = {}
    if not isinstance(request_body, dict):
        return out
    for msg in request_body.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role") == "tool" and msg.get("tool_call_id"):
            out[msg["tool_call_id"]] = _message_text(msg.get("content"))
    return out


def response_tool_calls(completion: dict | None) -> list[dict]:
    if not completion or not completion.get("choices"):
        return []
    msg = completion["choices"][0].get("message") or {}
    return list(msg.get("tool_calls") or [])


def tool_definitions(request_body: Any) -> dict[str, dict]:
    """``{name: {"description", "parameters"}}`` from a request's ``tools``."""
    out: dict[str, dict] = {}
    if isinstance(request_body, dict):
        for tool in request_body.get("tools") or []:
            fn = (tool or {}).get("function") or {}
            if fn.get("name"):
                out[fn["name"]] = {
                    "description": fn.get("description"),
                    "parameters": fn.get("parameters"),
                }
    return out


# ------------------------------------------------------------------ expected


def require_chat_completions(inters: list[Interaction], path: Any = "") -> None:
    """Raise ValueError unless every interaction is a POST to .../chat/completions."""
    bad = [i.uri for i in inters if i.method != "POST" or not i.path.endswith("/chat/completions")]
    if bad or not inters:
        raise ValueError(
            f"{path}: only OpenAI chat-completions cassettes are supported (got "
            f"{bad or 'no interactions'})"
        )


def expected_from_cassette(path: str | Path) -> dict:
    """Ground truth derived only from the cassette's recorded traffic.

    ``llm_calls``: one entry per recorded response (model as returned, usage
    tokens, first choice's finish_reason).
    ``tool_calls``: every tool call made by the model in a recorded response;
    ``result`` is the content of the ``tool`` message with that call id in the
    *next* recorded request, or None when no later request answers it.
    ``final_output``: the text of the last recorded response (None when it has
    no text, e.g. it ends on tool calls).
    ``user_inputs``: the ``user`` messages of the requests, in order of first
    appearance, duplicates removed (re-recorded cassettes repeat the request).
    ``history_tool_calls`` (extra): tool calls that only appear in request
    history (assistant messages of a request, never returned by a recorded
    response), with their results from the same request; an instrumentation
    will show them inside LLM input messages but no tool was run for them.
    """
    inters = load_interactions(path)
    require_chat_completions(inters, path)
    llm_calls: list[dict] = []
    tool_calls: list[dict] = []
    response_call_ids: set[str] = set()
    final_output: str | None = None
    for pos, inter in enumerate(inters):
        comp = response_completion(inter)
        if comp is None:
            continue
        usage = comp.get("usage") or {}
        choice = (comp.get("choices") or [{}])[0]
        llm_calls.append(
            {
                "model": comp.get("model"),
                "input_tokens": usage.get("prompt_tokens"),
                "output_tokens": usage.get("completion_tokens"),
                "finish_reason": choice.get("finish_reason"),
            }
        )
        answers = tool_results_in(inters[pos + 1].request_body) if pos + 1 < len(inters) else {}
        for tc in response_tool_calls(comp):
            fn = tc.get("function") or {}
            response_call_ids.add(tc.get("id"))
            tool_calls.append(
                {
                    "name": fn.get("name"),
                    "call_id": tc.get("id"),
                    "arguments": _parse_args(fn.get("arguments")),
                    "result": answers.get(tc.get("id")),
                }
            )
        final_output = _message_text((choice.get("message") or {}).get("content"))

    user_inputs: list[str] = []
    history: list[dict] = []
    seen_history: set[tuple] = set()
    for inter in inters:
        body = inter.request_body
        if not isinstance(body, dict):
            continue
        results = tool_results_in(body)
        for msg in body.get("messages") or []:
            if not isinstance(msg, dict):
                continue
            if msg.get("role") == "user":
                text = _message_text(msg.get("content"))
                if text is not None and text not in user_inputs:
                    user_inputs.append(text)
            if msg.get("role") == "assistant":
                for tc in msg.get("tool_calls") or []:
                    if tc.get("id") in response_call_ids:
                        continue
                    fn = tc.get("function") or {}
                    key = (tc.get("id"), fn.get("name"), fn.get("arguments"))
                    if key in seen_history:
                        continue
                    seen_history.add(key)
                    history.append(
                        {
                            "name": fn.get("name"),
                            "call_id": tc.get("id"),
                            "arguments": _parse_args(fn.get("arguments")),
                            "result": results.get(tc.get("id")),
                        }
                    )
    return {
        "llm_calls": llm_calls,
        "tool_calls": tool_calls,
        "final_output": final_output,
        "user_inputs": user_inputs,
        "history_tool_calls": history,
    }


def answered_tool_calls(path: str | Path) -> list[dict]:
    """The tool calls a faithful replay executes (those a later request answers)."""
    return [tc for tc in expected_from_cassette(path)["tool_calls"] if tc["result"] is not None]


def is_single_agent_loop(path: str | Path) -> tuple[bool, str]:
    """Whether the cassette is one complete agent loop a real framework can re-drive.

    True when every response except the last asks for tools that the next
    request answers (and the next request extends the previous one), and the
    last response is a final answer without tool calls.
    """
    inters = load_interactions(path)
    try:
        require_chat_completions(inters, path)
    except ValueError as exc:
        return False, str(exc)
    for pos, inter in enumerate(inters):
        comp = response_completion(inter)
        calls = response_tool_calls(comp)
        last = pos == len(inters) - 1
        if last:
            if calls:
                return False, (
                    f"response {pos} asks for tools {[c['function']['name'] for c in calls]} "
                    "but no later request carries their results (an agent would send one more "
                    "request)"
                )
            continue
        if not calls:
            return False, (
                f"response {pos} is a final answer but {len(inters) - pos - 1} more interaction(s) "
                "follow "
                "(several recordings appended in one cassette)"
            )
        answers = tool_results_in(inters[pos + 1].request_body)
        missing = [c["id"] for c in calls if c.get("id") not in answers]
        if missing:
            return (
                False,
                f"request {pos + 1} does not answer tool calls {missing} of response {pos}",
            )
    return True, "ok"
