"""What counts as a tool call's result.

A tool result is the content the tool returned, as text. Some instrumentations record
something else in its place: Microsoft Agent Framework (Python) writes
``gen_ai.tool.call.result`` as the text of the tool's text contents *or* ``str(parsed)``, so a
tool that returns an empty string or an image is recorded as the Python repr
``[<agent_framework._types.Content object at 0x7f...>]``. A repr is not content: it is never a
result (so never grounding or judge evidence); the call's result comes from another record
(the history the next LLM call received) or is unavailable, with the reason in
:attr:`~tracegrade.trace.ToolCall.result_unavailable`.

A result found outside the history that holds its call (a ``gen_ai.tool.message`` event whose
id matches no call of its history, or one emitted on a tool span) is *loose*: it is paired
with the trace's calls that have no result, by id and else by order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.spans import json_loads
from tracegrade.trace import ToolCall

_REPR = r"<[A-Za-z_][\w.]*(?: object)?(?: [^<>\s]+)? at 0x[0-9A-Fa-f]+>"
OBJECT_REPR = re.compile(rf"^\s*(?:[\[(]\s*)?{_REPR}(?:\s*,\s*{_REPR})*\s*(?:,\s*)?(?:[\])]\s*)?$")
"""A Python default repr (``<pkg.Class object at 0x7f...>``), alone or in a list or tuple.
No two whitespace runs can match the same spaces (each optional punctuation owns the spaces
after it): ``\\s*[\\[(]?\\s*`` backtracked quadratically over a long run of spaces."""

REPR_REASON = "a Python object repr was recorded instead of the result"
"""``ToolCall.result_unavailable`` when only a repr was recorded."""


def is_object_repr(text: str | None) -> bool:
    """True when ``text`` is only Python default reprs (see :data:`OBJECT_REPR`)."""
    return text is not None and " at 0x" in text and OBJECT_REPR.match(text) is not None


def choose_result(*recorded: str | None) -> tuple[str | None, str | None]:
    """``(result, why unavailable)`` from the records of one call's result, best first.

    The first record that is not ``None`` and not a repr is the result. When none is and one
    was a repr, the result is ``None`` and the reason is :data:`REPR_REASON`; when nothing was
    recorded, both are ``None``.
    """
    usable = next((r for r in recorded if r is not None and not is_object_repr(r)), None)
    if usable is not None:
        return usable, None
    return None, REPR_REASON if any(is_object_repr(r) for r in recorded) else None


_WRAPPER_KEYS = ("text", "result", "output", "content", "blocks", "value", "data", "raw")
"""Keys a tool-output object keeps the value under (MCP content blocks ``{"type": "text",
"text": ...}``, ``{"result": ...}`` envelopes, tool-output objects holding the raw value
beside its text)."""


def _candidates(value: Any, depth: int = 0) -> list[Any]:
    """The values a recorded result may wrap: itself, then what its wrapper keys hold (one
    or two levels), content blocks' text joined."""
    found = [value]
    if depth >= 2:
        return found
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            value = json_loads(value)
        except ValueError:
            return found
        found.append(value)
    if isinstance(value, Mapping):
        for key in _WRAPPER_KEYS:
            if key in value:
                found += _candidates(value[key], depth + 1)
    elif isinstance(value, list) and value and all(isinstance(i, Mapping) for i in value):
        texts = [i.get("text") for i in value]
        if all(isinstance(t, str) for t in texts):
            found.append("".join(str(t) for t in texts))
    return found


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    return False


def consistent_result(span_result: str | None, history_result: str | None) -> str | None:
    """The span's record of a result unwrapped to what the model was given back (the
    transcript), when one of its unwrappings is that: an MCP content block, a ``{"result":
    ...}`` envelope or a tool-output object around the value the next LLM call received.
    Otherwise the span's record as it is (``None`` when there is no span record)."""
    if span_result is None or history_result is None or span_result == history_result:
        return span_result
    wanted = [history_result]
    if history_result[:1] in ("{", "["):
        with contextlib.suppress(ValueError):
            wanted.append(json_loads(history_result))
    for candidate in _candidates(span_result)[1:]:
        if any(_same(candidate, w) for w in wanted):
            return history_result
    return span_result


@dataclass(frozen=True)
class LooseResult:
    """A tool result whose call was not found in the same message history."""

    call_id: str | None
    response: str | None
    llm_index: int | None = None
    """Index of the LLM call whose input held it (None: an agent history or a tool span)."""


def pair_loose_results(calls: Sequence[ToolCall], loose: Sequence[LooseResult]) -> list[ToolCall]:
    """``calls`` (in execution order) with loose results filled in where a call has none.

    A loose result whose id names a call of the trace belongs to that call only: it goes to
    the first call with that id still without a result, if any. Loose results without an id,
    or with an id no call has, go in order to the remaining calls without a result that were
    requested before the LLM call whose input held the result (a result from an earlier turn
    recorded in another trace is not taken for a call of this one).
    """
    filled = list(calls)
    ids = {c.call_id for c in filled if c.call_id}
    open_calls = [i for i, c in enumerate(filled) if c.result is None and c.error is None]
    by_order: list[LooseResult] = []
    for item in loose:
        if not item.call_id or item.call_id not in ids:
            by_order.append(item)
            continue
        index = next((i for i in open_calls if filled[i].call_id == item.call_id), None)
        if index is not None:
            open_calls.remove(index)
            filled[index] = _with_result(filled[index], item.response)
    for item in by_order:
        index = next((i for i in open_calls if _before(filled[i], item)), None)
        if index is not None:
            open_calls.remove(index)
            filled[index] = _with_result(filled[index], item.response)
    return filled


def _before(call: ToolCall, item: LooseResult) -> bool:
    """True when ``call`` may have produced ``item``: requested before ``item``'s LLM call."""
    return (
        item.llm_index is None
        or call.llm_call_index is None
        or call.llm_call_index < item.llm_index
    )


def _with_result(call: ToolCall, response: str | None) -> ToolCall:
    result, unavailable = choose_result(response)
    if result is None:
        return call
    return dataclasses.replace(call, result=result, result_unavailable=unavailable)
