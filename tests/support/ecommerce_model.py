"""A scripted model for the example shop agent (examples/ecommerce): a ScriptedOpenAI script.

:func:`ecommerce_model` returns a callable on the Chat Completions request body (see
:mod:`tests.support.openai_server`). It recognises the case from the first user message of
the request (the ``input`` of an entry in ``ecommerce_script.yaml``, one per case of
``datasets/ecommerce/golden.yaml``), picks the turn from the number of user messages, and
answers step by step: while the turn has planned tool-call steps that the request does not yet
show (assistant messages with tool calls after the last user message), it returns the next
step's tool calls; then it writes the final answer from the tool results in the request, so
every price, id and date it states comes from a tool.

Variants (regressions a golden dataset must catch):

- ``good``: the script as written.
- ``skip_tool``: never makes the last planned step of the conversation's last turn (a required
  tool is skipped) and answers with what it has.
- ``invented_price``: states every price from memory, 10% below what the tools returned.

A later turn may name its user message (``input``) and what the model says when a request
starts with it, the conversation before it missing (``without_context``): an agent that lost
its thread (after a restart) asks the customer what they mean instead of answering.

``delay_s`` delays every response (e.g. 0.2 s, for runner benchmarks). A request whose first
user message is not in the script gets an HTTP 400 naming it, so a mismatch fails loudly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml

from tests.support.openai_server import (
    Reply,
    ScriptedOpenAI,
    delayed,
    error,
    text,
    tool_calls,
)

SCRIPT_PATH = Path(__file__).with_name("ecommerce_script.yaml")
Variant = Literal["good", "skip_tool", "invented_price"]
VARIANTS: tuple[Variant, ...] = ("good", "skip_tool", "invented_price")

_PRICE_KEYS = frozenset(
    {
        "price",
        "original_price",
        "total",
        "unit_price",
        "refund_amount",
        "discount_amount",
        "total_after_discount",
        "current_price",
        "average_price_90d",
        "min_price_90d",
    }
)
_HIDDEN_KEYS = frozenset({"id", "product_id", "order_id", "name"})
_PRICE = re.compile(r"\$(\d[\d,]*\.\d\d)")
_FROM_MEMORY = "I believe everything is in order."


@dataclass(frozen=True)
class Turn:
    """One user turn of a case: planned tool-call steps and how to word the answer."""

    steps: tuple[tuple[tuple[str, dict[str, Any]], ...], ...]
    say: str
    fields: tuple[str, ...] | None = None
    render: Literal["all", "last"] = "all"
    skipped: bool = False
    """True when the skip_tool variant dropped a planned step."""
    input: str | None = None
    without_context: str | None = None


@dataclass(frozen=True)
class CaseScript:
    case_id: str
    input: str
    turns: tuple[Turn, ...]


def _step(raw: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    calls = raw if isinstance(raw, list) else [raw]
    return tuple((name, dict(args)) for call in calls for name, args in call.items())


def _turn(raw: Mapping[str, Any]) -> Turn:
    fields = raw.get("fields")
    return Turn(
        tuple(_step(s) for s in raw.get("steps", ())),
        raw["say"],
        tuple(fields) if fields is not None else None,
        raw.get("render", "all"),
        input=raw.get("input"),
        without_context=raw.get("without_context"),
    )


@cache
def load_script(path: Path = SCRIPT_PATH) -> dict[str, CaseScript]:
    """The per-case scripts by normalised first user message."""
    data = yaml.safe_load(path.read_text())
    scripts = [
        CaseScript(case_id, raw["input"], tuple(_turn(t) for t in raw["turns"]))
        for case_id, raw in data.items()
    ]
    return {_key(s.input): s for s in scripts}


def _key(message: str) -> str:
    return " ".join(message.split()).casefold()


@cache
def without_context(path: Path = SCRIPT_PATH) -> dict[str, str]:
    """What the model says to a later turn's message that arrives without the conversation
    before it, by normalised message."""
    return {
        _key(turn.input): turn.without_context
        for script in load_script(path).values()
        for turn in script.turns
        if turn.input and turn.without_context
    }


# --- reading the request ----------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return content or ""


def _current_turn(messages: Sequence[Mapping[str, Any]]) -> tuple[int, list[Mapping[str, Any]]]:
    """(number of user messages, the messages after the last one)."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    return len(users), list(messages[users[-1] + 1 :]) if users else []


def _results(since_user: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Tool results after the last user message, grouped by the step that requested them."""
    steps: list[list[Any]] = []
    for message in since_user:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            steps.append([])
        elif message.get("role") == "tool" and steps:
            steps[-1].append(json.loads(_text_of(message.get("content"))))
    return steps


# --- writing the answer -----------------------------------------------------------------------


def _value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if key in _PRICE_KEYS and isinstance(value, (int, float)):
        return f"${value:,.2f}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k.replace('_', ' ')} {_value(k, v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(
            f"({_value(key, v)})" if isinstance(v, Mapping) else _value(key, v) for v in value
        )
    return str(value)


def _item(result: Mapping[str, Any], fields: tuple[str, ...] | None) -> str:
    if "error" in result:
        return f"Sorry, that didn't work: {result['error']}"
    head = result.get("name") or (
        f"Order ID {result['order_id']}" if "order_id" in result else "Result"
    )
    keys = [k for k in result if (k in fields if fields is not None else k not in _HIDDEN_KEYS)]
    return f"{head}: " + "; ".join(
        f"{k.replace('_', ' ')}: {_value(k, result[k])}" for k in keys if k != "name"
    )


def render(results: Sequence[Any], fields: tuple[str, ...] | None) -> str:
    """Tool results as answer text: one line per listed item, one paragraph per object."""
    lines = []
    for result in results:
        if isinstance(result, list):
            lines.extend(
                [f"- {_item(r, fields)}" for r in result] or ["No results matched your query."]
            )
        else:
            lines.append(_item(result, fields))
    return "\n".join(lines)


def _invent_prices(answer: str) -> str:
    return _PRICE.sub(lambda m: f"${float(m.group(1).replace(',', '')) * 0.9:,.2f}", answer)


# --- the script -------------------------------------------------------------------------------


def _planned(script: CaseScript, turn_number: int, variant: Variant) -> Turn | None:
    if turn_number > len(script.turns):
        return None
    turn = script.turns[turn_number - 1]
    if variant == "skip_tool" and turn_number == len(script.turns) and turn.steps:
        return Turn(turn.steps[:-1], turn.say, turn.fields, turn.render, skipped=True)
    return turn


def _answer(turn: Turn, steps: list[list[Any]], variant: Variant) -> str:
    shown = steps[-1:] if turn.render == "last" else steps
    results = [r for step in shown for r in step]
    if not results:
        return f"{turn.say}\n{_FROM_MEMORY}" if turn.skipped else turn.say
    body = render(results, turn.fields)
    return f"{turn.say}\n{_invent_prices(body) if variant == 'invented_price' else body}"


def respond(body: Mapping[str, Any], variant: Variant = "good") -> Reply:
    """The scripted model's reply to one Chat Completions request body."""
    messages = body.get("messages") or []
    first = next((_text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
    script = load_script().get(_key(first))
    if script is None and _key(first) in without_context():
        return text(without_context()[_key(first)])
    if script is None:
        return error(400, f"ecommerce script: no case starts with {first!r}")
    turn_number, since_user = _current_turn(messages)
    turn = _planned(script, turn_number, variant)
    if turn is None:
        return error(
            400,
            f"ecommerce script: case {script.case_id} has {len(script.turns)} turn(s), "
            f"got user message {turn_number}",
        )
    steps = _results(since_user)
    if len(steps) < len(turn.steps):
        return tool_calls(*turn.steps[len(steps)])
    return text(_answer(turn, steps, variant))


def ecommerce_model(
    variant: Variant = "good", *, delay_s: float = 0.0
) -> Callable[[dict[str, Any]], Reply]:
    """A ScriptedOpenAI script playing the model for the shop agent (see the module docstring).

    Raises:
        ValueError: an unknown variant (the message lists the valid ones) or a negative delay.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; valid: {list(VARIANTS)}")
    if delay_s < 0:
        raise ValueError(f"delay_s must be >= 0, got {delay_s}")

    def script(body: dict[str, Any]) -> Reply:
        reply = respond(body, variant)
        return delayed(delay_s, reply) if delay_s else reply

    return script


@contextmanager
def shop_models(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """``start(variant)``: serve :func:`ecommerce_model` (``variant``) on a loopback
    :class:`ScriptedOpenAI` and point the shop agent's ``OPENAI_*`` variables at it; every
    server started is stopped on exit. Wrap it in a test module's fixture."""
    servers: list[ScriptedOpenAI] = []

    def start(variant: str) -> None:
        server = ScriptedOpenAI(ecommerce_model(variant)).start()  # type: ignore[arg-type]
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
