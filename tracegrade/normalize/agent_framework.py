"""Microsoft Agent Framework (``agent_framework.observability``), Python and .NET.

Mostly GenAI semconv (read by :mod:`.genai`), with these quirks handled here:

- ``gen_ai.tool.call.id`` is the string ``"unknown"`` when the model gave no id: it is not an
  id, so the view records none and the assembler joins by name and order;
- ``gen_ai.tool.call.arguments`` is ``json.dumps(kwargs)``, or the string ``"None"`` for a
  call without arguments: that means ``{}``;
- ``gen_ai.response.finish_reasons`` is a JSON string such as ``'["stop"]'`` (decoded by
  :func:`~tracegrade.normalize.messages.as_str_list` for every convention);
- usage on the ``invoke_agent`` span aggregates the inner chat calls;
- .NET names agent spans ``invoke_agent {Name}({Id})``.
"""

from __future__ import annotations

import re

from tracegrade.normalize.view import Context, SpanView
from tracegrade.spans import Span

NAME = "agent-framework"
NO_CALL_ID = "unknown"
_DOTNET_AGENT = re.compile(r"^invoke_agent (?P<name>.+)\((?P<id>[^()]*)\)$")


_SCOPES = ("agent_framework", "Microsoft.Agents", "Experimental.Microsoft")


def _is_agent_framework(span: Span, view: SpanView) -> bool:
    return span.scope_name.startswith(_SCOPES) or view.has_key_prefix("agent_framework.")


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Apply Agent Framework's quirks to ``view``; True if the span is Agent Framework's."""
    if not _is_agent_framework(span, view):
        return False
    view.recognise(NAME)
    attrs = span.attributes
    if attrs.get("gen_ai.tool.call.id") == NO_CALL_ID:
        view.fill(tool_call_id="")
    if attrs.get("gen_ai.tool.call.arguments") == "None":
        view.fill(tool_arguments={})
    match = _DOTNET_AGENT.match(span.name)
    if match and "gen_ai.agent.name" not in attrs:
        view.fill(agent_name=match.group("name"))
    return True
