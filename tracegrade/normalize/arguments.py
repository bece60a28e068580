"""Tool-call arguments: the tool span's record reconciled with the model's request.

A tool call's arguments can be recorded twice: in the model's response (the ``tool_call``
part: what the model asked for, always a JSON object for function tools) and on the tool
span (what the framework says the tool received). Frameworks record the second in shapes
that are not the arguments: LangChain with OpenInference records a one-parameter tool's bare
value (``"A100"``, not ``{"order_id": "A100"}``); Traceloop's ``withTool`` on a closure
records ``{"args": [], "kwargs": {}}`` (nothing); frameworks add injected context
parameters; and a record may be empty where the other is not (any-agent records LlamaIndex's
requests as ``{}``). **Rule** (:func:`reconcile`): an empty record is no evidence; when both
are recorded, the model's request is the call's arguments; the span's record *agrees* when it
is equal, empty, the one value of a one-key request, or the request plus extra keys.
Anything else disagrees, and the call says so
(:attr:`~tracegrade.trace.ToolCall.arguments_mismatch`, a lint finding): never silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_EMPTY: tuple[Any, ...] = (None, "", {}, [], ())


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if isinstance(a, (str, int, float, bool)) and isinstance(b, (str, int, float, bool)):
        return str(a) == str(b)
    return False


def agrees(span_arguments: Any, requested: Any) -> bool:
    """True when the span's record of the arguments is consistent with the request
    (module docstring)."""
    span_arguments = unwrap_arguments(span_arguments)
    if _same(span_arguments, requested) or span_arguments in _EMPTY:
        return True
    if not isinstance(requested, Mapping):
        return False
    if not isinstance(span_arguments, Mapping):
        return len(requested) == 1 and _same(next(iter(requested.values())), span_arguments)
    return all(
        key in span_arguments and _same(span_arguments[key], value)
        for key, value in requested.items()
    )


def unwrap_arguments(value: Any) -> Any:
    """Arguments with a call envelope removed: ``{"args": [...], "kwargs": {...}, ...}``
    (Traceloop decorators; smolagents adds ``sanitize_inputs_outputs``) or ``{"kwargs":
    {...}}`` (DSPy) gives its keyword arguments, or its one positional object; anything else
    is returned as it is."""
    if isinstance(value, Mapping) and set(value) == {"kwargs"}:
        kwargs = value["kwargs"]  # a call envelope with keyword arguments only (DSPy)
        return dict(kwargs) if isinstance(kwargs, Mapping) else value
    if not (isinstance(value, Mapping) and "kwargs" in value and "args" in value):
        return value
    kwargs, args = value.get("kwargs"), value.get("args")
    if not isinstance(kwargs, Mapping) or not isinstance(args, (list, tuple)):
        return value
    if not args:
        return dict(kwargs)
    if not kwargs and len(args) == 1:  # one positional argument: itself (an object's keys)
        return dict(args[0]) if isinstance(args[0], Mapping) else args[0]
    return value


def reconcile(
    span_arguments: Any, span_recorded: bool, requested: Any, request_recorded: bool
) -> tuple[Any, bool, str | None]:
    """``(arguments, recorded, mismatch)`` of a call seen as a span and as a request.

    ``mismatch`` names both records when they disagree (module docstring), else is None.
    """
    span_arguments = unwrap_arguments(span_arguments)
    if not request_recorded or (requested in _EMPTY and span_recorded):
        return span_arguments, span_recorded, None
    if not span_recorded or agrees(span_arguments, requested):
        return requested, True, None
    mismatch = (
        f"the tool span recorded {_show(span_arguments)} but the model requested {_show(requested)}"
    )
    return requested, True, mismatch


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."
