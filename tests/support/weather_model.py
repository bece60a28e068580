"""A scripted model for the getting-started agent (docs/getting-started/instrument-your-agent.md):
a :class:`~tests.support.openai_server.ScriptedOpenAI` script on the Chat Completions body.

The agent offers one tool, ``get_weather(city)``. While the request holds no tool result after
its last user message the model calls ``get_weather`` with the city named in that message (a
capitalised word after "in"); then it answers from the tool result, quoting it. A message that
names no city is answered directly ("Which city?"), with no tool call.
"""

from __future__ import annotations

import re
from typing import Any

from tests.support.openai_server import Reply, text, tool_calls

_CITY = re.compile(r"\bin ([A-Z][a-zA-Z]+)")


def weather_model(body: dict[str, Any]) -> Reply:
    """The model's reply to one request (module docstring)."""
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    results = [m for m in messages[last_user + 1 :] if m.get("role") == "tool"]
    if results:
        return text(f"Here is the weather: {results[-1].get('content')}.")
    question = str(messages[last_user].get("content") or "") if last_user >= 0 else ""
    city = _CITY.search(question)
    if city is None:
        return text("Which city?")
    return tool_calls(("get_weather", {"city": city.group(1)}))
