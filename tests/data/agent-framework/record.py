"""Record ``object-result/traces.binpb`` and ``logs.binpb``: a real Microsoft Agent Framework
agent run whose tools return an empty string and an image, exported with the OpenTelemetry
SDK's own OTLP encoder.

Agent Framework 1.23 (``FunctionTool.invoke``) records ``gen_ai.tool.call.result`` as the text
of the tool's text contents ``or str(parsed)``; for an empty text (tau-bench's ``think`` tool
returns ``""``) and for a non-text result (an image) that is the Python repr
``[<agent_framework._types.Content object at 0x...>]``.

Run from the repository root with the harness venv (``python3 tests/harness/make_venvs.py
agent-framework``)::

    .venvs/harness-agent-framework/bin/python tests/data/agent-framework/record.py [OUT_DIR]
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "harness"))
sys.path.insert(0, str(ROOT))

from scenario import Telemetry, configure_env  # noqa: E402

from tests.support.openai_server import ScriptedOpenAI, text, tool_calls  # noqa: E402

OUT = Path(__file__).parent / "object-result"
SCRIPT = [
    tool_calls(("think", {"thought": "Check the flight status before answering."})),
    tool_calls(("get_flight_status", {"flight_number": "HAT170", "date": "2024-05-15"})),
    tool_calls(("get_seat_map", {"flight_number": "HAT170"})),
    text("Flight HAT170 on 2024-05-15 is on time; its seat map is attached."),
]


def think(thought: str) -> str:
    """Use the tool to think about something (tau-bench airline)."""
    return ""


def get_flight_status(flight_number: str, date: str) -> str:
    """Get the status of a flight on a date."""
    return "on time"


def get_seat_map(flight_number: str) -> object:
    """The seat map of a flight, as an image."""
    from agent_framework import Content

    return Content.from_uri(f"https://example.com/{flight_number}.png", media_type="image/png")


async def _run(base_url: str) -> None:
    from agent_framework import Agent, FunctionTool
    from agent_framework.observability import enable_instrumentation
    from agent_framework.openai import OpenAIChatCompletionClient

    enable_instrumentation(enable_sensitive_data=True)
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="test", base_url=base_url)
    tools = [
        FunctionTool(name=f.__name__, description=f.__doc__ or "", func=f)
        for f in (think, get_flight_status, get_seat_map)
    ]
    agent = Agent(client, instructions="You are an airline agent.", name="airline", tools=tools)
    await agent.run("Is flight HAT170 on time today?")


def main() -> None:
    configure_env("agent-framework", "default")
    os.environ.setdefault("OTEL_SERVICE_NAME", "airline-agent")
    telemetry = Telemetry()
    with ScriptedOpenAI(SCRIPT) as server:
        asyncio.run(_run(server.base_url))
    telemetry.flush()
    print(telemetry.write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))


if __name__ == "__main__":
    main()
