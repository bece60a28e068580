"""An agent traced by MLflow's own tracing (``mlflow.openai.autolog`` and ``@mlflow.trace``),
its model answering from a recorded cassette: the weather agent of the trace harness, logging
its trace to an MLflow tracking server. Run inside the backends venv::

    .venvs/harness-backends/bin/python tests/sources/mlflow_agent.py URL EXPERIMENT CASSETTE

Prints the MLflow trace id it logged. Its spans carry MLflow's own attributes only
(``mlflow.spanType``, ``mlflow.spanInputs``, ``mlflow.spanOutputs``, ``mlflow.chat.*``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))

import mlflow  # noqa: E402
import openai  # noqa: E402
from replay_server import ReplayServer  # noqa: E402


def main(url: str, experiment: str, cassette: str) -> int:
    mlflow.set_tracking_uri(url)
    mlflow.set_experiment(experiment)
    mlflow.openai.autolog()
    with ReplayServer(cassette) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key-not-used")
        bodies = [i.request_body for i in server.interactions]

        @mlflow.trace(span_type="TOOL", name="get_current_weather")
        def get_current_weather(location: str, result: str) -> str:
            return result

        @mlflow.trace(span_type="AGENT", name="weather-agent")
        def agent(question: str) -> str:
            first = client.chat.completions.create(**bodies[0])
            answers = {
                m["tool_call_id"]: m["content"]
                for m in bodies[1]["messages"]
                if m["role"] == "tool"
            }
            for call in first.choices[0].message.tool_calls or []:
                arguments = json.loads(call.function.arguments)
                get_current_weather(arguments["location"], answers[call.id])
            second = client.chat.completions.create(**bodies[1])
            return str(second.choices[0].message.content)

        agent(bodies[0]["messages"][-1]["content"])
    print(mlflow.get_last_active_trace_id())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:4]))
