"""The ground truth of a framework recording: what the scripted model and the tools did.

Computed from the two logs a recording leaves (stdlib only, so ``record.py`` can run it with
any Python): ``model.jsonl`` (:mod:`model_server`: every request with its decision and the
usage sent, whichever format it came in: chat completions, Responses, Anthropic Messages or
Gemini ``generateContent``; ``path`` says which) and ``driver.jsonl`` (:mod:`fwtools`: each
turn's start and end, each tool execution). Each entry is assigned to the turn whose
``[start, end]`` holds its time.

``truth.json``::

    {"version": 1, "setup": ..., "turns": [
      {"scenario", "turn", "conversation", "start_ns", "end_ns", "stream",
       "user_input": the turn's user text,
       "history": the user texts of the conversation's earlier turns,
       "tool_calls": [{"name", "arguments", "result" (JSON text) | null, "error" | null}],
           executed tools in the order the model requested them (parallel calls in the
           model's order),
       "rounds": [[index into tool_calls, ...], ...] one list per model message with calls,
       "final_answer": the last answer the model gave (text, or final_answer's argument),
       "llm_calls": model requests served, "unmatched_llm_calls": of which anchored to no turn,
       "input_tokens", "output_tokens": usage sent, summed (null when a request got none),
       "driver_error": the framework's exception, if the turn raised,
       "retrievals": [{"query", "documents": [document id, ...]}] what the retrievers
           returned, in order (only in recordings whose driver logged retrievals: the RAG
           setups)}]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRUTH_VERSION = 1


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _turn_windows(driver: list[dict[str, Any]]) -> list[dict[str, Any]]:
    windows, open_turns = [], {}
    for entry in driver:
        key = (entry.get("scenario"), entry.get("turn"))
        if entry["event"] == "turn_start":
            open_turns[key] = entry
        elif entry["event"] == "turn_end" and key in open_turns:
            start = open_turns.pop(key)
            windows.append({"start": start, "end": entry})
    return windows


def _within(entries: list[dict[str, Any]], start: int, end: int) -> list[dict[str, Any]]:
    return [e for e in entries if start <= e["t_ns"] <= end]


def _ordered_tools(requests: list[dict], tools: list[dict]) -> tuple[list[dict], list[list[int]]]:
    """Executed tools in the model's requested order, and the rounds (model messages)."""
    remaining = list(tools)
    ordered: list[dict] = []
    rounds: list[list[int]] = []
    for request in requests:
        calls = request.get("reply", {}).get("tool_calls") or []
        round_indexes = []
        for call in calls:
            if call["name"] == "final_answer":
                continue
            match = next(
                (
                    t
                    for t in remaining
                    if t["name"] == call["name"] and t["arguments"] == call["arguments"]
                ),
                None,
            )
            if match is None:
                continue
            remaining.remove(match)
            round_indexes.append(len(ordered))
            # the name the model called it by (Semantic Kernel: ``ShopPlugin-get_order``)
            ordered.append({**match, "name": call.get("offered_as", match["name"])})
        if round_indexes:
            rounds.append(round_indexes)
    for extra in remaining:  # executed without a matching request (should not happen)
        rounds.append([len(ordered)])
        ordered.append(extra)
    calls = [
        {
            "name": t["name"],
            "arguments": t["arguments"],
            "result": t.get("result"),
            "error": t.get("error"),
        }
        for t in ordered
    ]
    return calls, rounds


def _final_answer(requests: list[dict]) -> str | None:
    for request in reversed(requests):
        reply = request.get("reply") or {}
        if reply.get("text") is not None:
            return reply["text"]
        for call in reply.get("tool_calls") or []:
            if call["name"] == "final_answer":
                return call["arguments"].get("answer")
        return None
    return None


def _tokens(requests: list[dict]) -> tuple[int | None, int | None]:
    if not requests or any(r.get("usage") is None for r in requests):
        return None, None
    return (
        sum(r["usage"]["input_tokens"] for r in requests),
        sum(r["usage"]["output_tokens"] for r in requests),
    )


def compute(setup: str, model_log: Path, driver_log: Path) -> dict[str, Any]:
    """The truth document (see the module docstring)."""
    model = [e for e in read_jsonl(model_log) if not e.get("unsupported")]
    driver = read_jsonl(driver_log)
    tools = [e for e in driver if e["event"] == "tool"]
    retrievals = [e for e in driver if e["event"] == "retrieval"]
    history: dict[str, list[str]] = {}
    turns = []
    for window in _turn_windows(driver):
        start, end = window["start"], window["end"]
        begin, finish = start["t_ns"], end["t_ns"]
        requests = _within(model, begin, finish)
        calls, rounds = _ordered_tools(requests, _within(tools, begin, finish))
        input_tokens, output_tokens = _tokens(requests)
        scenario = start["scenario"]
        turn: dict[str, Any] = {
            "scenario": scenario,
            "turn": start["turn"],
            "conversation": f"conv-{scenario}",
            "start_ns": begin,
            "end_ns": finish,
            "stream": bool(start.get("stream")),
            "user_input": start["user"],
            "history": list(history.get(scenario, [])),
            "tool_calls": calls,
            "rounds": rounds,
            "final_answer": _final_answer(requests),
            "llm_calls": len(requests),
            "unmatched_llm_calls": sum(1 for r in requests if r.get("scenario") is None),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "driver_error": end.get("error"),
            "driver_answer": end.get("answer"),
        }
        if retrievals:
            turn["retrievals"] = [
                {"query": r["query"], "documents": [d["id"] for d in r["documents"]]}
                for r in _within(retrievals, begin, finish)
            ]
        turns.append(turn)
        history.setdefault(scenario, []).append(start["user"])
    return {"version": TRUTH_VERSION, "setup": setup, "turns": turns}
