"""What counts as a tool call's result.

A tool result is the content the tool returned, as text. Some instrumentations record
something else in its place: Microsoft Agent Framework (Python) writes
``gen_ai.tool.call.result`` as the text of the tool's text contents *or* ``str(parsed)``, so a
tool that returns an empty string or an image is recorded as the Python repr
``[<agent_framework._types.Content object at 0x7f...>]``. A repr is not content: it is never a
result (so never grounding or judge evidence); the call's result comes from another record
(the history the next LLM call received) or is unavailable, with the reason in
:attr:`~tracegrade.trace.ToolCall.result_unavailable`.
"""

from __future__ import annotations

import re

_REPR = r"<[A-Za-z_][\w.]*(?: object)?(?: [^<>\s]+)? at 0x[0-9A-Fa-f]+>"
OBJECT_REPR = re.compile(rf"^\s*[\[(]?\s*{_REPR}(?:\s*,\s*{_REPR})*\s*,?\s*[\])]?\s*$")
"""A Python default repr (``<pkg.Class object at 0x7f...>``), alone or in a list or tuple."""

REPR_REASON = "a Python object repr was recorded instead of the result"
"""``ToolCall.result_unavailable`` when only a repr was recorded."""


def is_object_repr(text: str | None) -> bool:
    """True when ``text`` is only Python default reprs (see :data:`OBJECT_REPR`)."""
    return text is not None and OBJECT_REPR.match(text) is not None


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
