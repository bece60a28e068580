"""Issue 37: a real Phoenix server and a real MLflow tracking server (started once per session),
sent traces by a real instrumented agent over OTLP; ``tracegrade import --from`` pulls them
back, and ``inspect --json`` of the pulled traces equals that of the same traces as the agent
exported them to a file: tool calls, arguments, results, answer, tokens.

What a backend does not keep is named, not hidden: Phoenix keeps no resource and times to the
microsecond; MLflow keeps no resource (but ``service.name``, as a tag) and adds its own
``mlflow.*`` attributes to the root span.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from tests.sources.conftest import WEATHER, run_weather_agent
from tests.sources.servers import Server, backends_python
from tests.support.harness_venvs import cassette_path
from tracegrade.cli import cli

REPO = Path(__file__).resolve().parents[2]
WEATHER_QUESTION = "What's the weather in Seattle and San Francisco today?"


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _inspect(*args: str) -> list[dict[str, Any]]:
    output = _cli("inspect", "--json", *args).output
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def _differences(pulled: Any, sent: Any, tolerance_ns: int = 0, path: str = "") -> list[str]:
    """Where two inspect documents differ (paths); times (``start_unix_nano``,
    ``duration_ms``) may differ by ``tolerance_ns`` (what a backend rounds its times to)."""
    if isinstance(pulled, dict) and isinstance(sent, dict):
        keys = sorted(set(pulled) | set(sent))
        return [
            d
            for k in keys
            for d in _differences(pulled.get(k), sent.get(k), tolerance_ns, f"{path}.{k}")
        ]
    if isinstance(pulled, list) and isinstance(sent, list) and len(pulled) == len(sent):
        return [
            d
            for i, (a, b) in enumerate(zip(pulled, sent, strict=True))
            for d in _differences(a, b, tolerance_ns, f"{path}[{i}]")
        ]
    if path.endswith(".start_unix_nano") and isinstance(pulled, int) and isinstance(sent, int):
        return [] if abs(pulled - sent) <= tolerance_ns else [f"{path}: {pulled} != {sent}"]
    if path.endswith("duration_ms") and isinstance(pulled, float) and isinstance(sent, float):
        close = abs(pulled - sent) * 1e6 <= 2 * tolerance_ns
        return [] if close else [f"{path}: {pulled} != {sent}"]
    return [] if pulled == sent else [f"{path}: {pulled!r} != {sent!r}"]


MLFLOW_READ_DIFFERENTLY = {
    # the mlflow map reads MLflow's own attributes beside OpenInference's (every field the
    # same: the OpenInference attributes come first)
    "[0].conventions: ['mlflow', 'openinference'] != ['openinference']",
}
"""How the same spans read with MLflow's attributes beside them: only the conventions list
differs."""


def _experiment(url: str, name: str) -> str:
    """The id of the MLflow experiment ``name``, created when missing."""
    found = httpx.get(
        url + "/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": name}
    )
    if found.status_code == 200:
        return str(found.json()["experiment"]["experiment_id"])
    created = httpx.post(url + "/api/2.0/mlflow/experiments/create", json={"name": name})
    return str(created.json()["experiment_id"])


def _wait_for(url: str, params: dict[str, Any], key: str, count: int) -> None:
    """Until the backend shows ``count`` items (ingestion is asynchronous)."""
    for _ in range(120):
        answer = httpx.get(url, params=params, timeout=10).json()
        if len(answer.get(key) or []) >= count:
            return
        time.sleep(0.5)
    raise AssertionError(f"{url} never showed the traces sent")


def test_phoenix_pull_reads_as_the_agents_file(
    backend_servers: dict[str, Server], tmp_path: Path
) -> None:
    phoenix = backend_servers["phoenix"]
    file = run_weather_agent(tmp_path / "agent", phoenix.url + "/v1/traces")
    _wait_for(phoenix.url + "/v1/projects/default/traces", {}, "data", 1)
    db = str(tmp_path / "store.db")
    first = _cli("import", "--from", "phoenix", "--url", phoenix.url, "--db", db).output
    assert "1 new" in first
    again = _cli("import", "--from", "phoenix", "--url", phoenix.url, "--db", db).output
    assert "resumed from" in again and "0 new" in again and "1 already stored" in again
    pulled, sent = _inspect("--db", db), _inspect(str(file))
    assert len(pulled) == len(sent) == 1
    for trace in (*pulled, *sent):
        trace.pop("resource_attributes")  # Phoenix keeps no resource
    assert _differences(pulled, sent, tolerance_ns=1000) == []  # Phoenix keeps microseconds
    assert pulled[0]["tool_calls"] and pulled[0]["final_output"]
    assert pulled[0]["input_tokens"] == sent[0]["input_tokens"] > 0


def test_mlflow_pull_reads_as_the_agents_file(
    backend_servers: dict[str, Server], tmp_path: Path
) -> None:
    mlflow = backend_servers["mlflow"]
    experiment = _experiment(mlflow.url, "weather")
    file = run_weather_agent(
        tmp_path / "agent", mlflow.url + "/v1/traces", f"x-mlflow-experiment-id={experiment}"
    )
    db = str(tmp_path / "store.db")
    out = _cli(
        "import", "--from", "mlflow", "--url", mlflow.url, "--project", "weather", "--db", db
    )
    assert "1 new" in out.output
    pulled, sent = _inspect("--db", db), _inspect(str(file))
    assert len(pulled) == len(sent) == 1
    root = pulled[0].pop("root_attributes")
    assert root["mlflow.spanType"] == "AGENT"  # MLflow's own attributes, as they are
    assert {k: v for k, v in root.items() if not k.startswith("mlflow.")} == sent[0].pop(
        "root_attributes"
    )
    assert pulled[0].pop("resource_attributes") == {"service.name": "tracegrade-harness"}
    sent[0].pop("resource_attributes")
    for field in ("user_inputs", "final_output", "tool_calls", "input_tokens", "output_tokens"):
        assert pulled[0][field] == sent[0][field], field
    # Everything else equal, times to the nanosecond, but for what the reader makes of
    # MLflow's own attributes (reported for a convention map; normalize/ is not ours):
    assert set(_differences(pulled, sent)) <= MLFLOW_READ_DIFFERENTLY
    assert [c["result"] for c in pulled[0]["tool_calls"]] == [
        "50 degrees and raining",
        "70 degrees and sunny",
    ]


def test_score_and_dataset_build_from_a_backend(
    backend_servers: dict[str, Server], tmp_path: Path
) -> None:
    """``score --from`` and ``dataset build --from`` pull first, then work on what was pulled."""
    phoenix = backend_servers["phoenix"]
    run_weather_agent(tmp_path / "agent", phoenix.url + "/v1/traces")
    _wait_for(phoenix.url + "/v1/projects/default/traces", {}, "data", 1)
    db = str(tmp_path / "store.db")
    result = CliRunner().invoke(
        cli,
        [
            "score",
            "--from",
            "phoenix",
            "--url",
            phoenix.url,
            "--db",
            db,
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["summary"]["results"] >= 1
    out = tmp_path / "golden.yaml"
    _cli(
        "dataset", "build", "--from", "phoenix", "--url", phoenix.url, "--db", db, "--out", str(out)
    )
    assert "get_current_weather" in out.read_text()


def _guide_blocks(page: str) -> list[str]:
    """The bash blocks of a guide that tests/docs skips because they need a server: this
    module runs them against the real one."""
    text = (REPO / "docs" / "guides" / "sources" / page).read_text()
    marker = "tests/sources/test_servers.py runs this block"
    blocks = []
    for chunk in text.split("<!-- skip: next")[1:]:
        reason, _, rest = chunk.partition("-->")
        if marker in reason:
            blocks.append(rest.split("```bash\n", 1)[1].split("```", 1)[0])
    assert blocks, f"{page}: no block for this test"
    return blocks


def _run_guide(page: str, env: dict[str, str], tmp_path: Path) -> str:
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    output = ""
    for block in _guide_blocks(page):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=tmp_path,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        output += done.stdout + done.stderr
    return output


def test_the_phoenix_guide_runs(backend_servers: dict[str, Server], tmp_path: Path) -> None:
    phoenix = backend_servers["phoenix"]
    run_weather_agent(tmp_path / "agent", phoenix.url + "/v1/traces")
    _wait_for(phoenix.url + "/v1/projects/default/traces", {}, "data", 1)
    output = _run_guide("phoenix.md", {"PHOENIX_COLLECTOR_ENDPOINT": phoenix.url}, tmp_path)
    assert "resumed from" in output and "0 new" in output


def test_the_mlflow_guide_runs(backend_servers: dict[str, Server], tmp_path: Path) -> None:
    mlflow = backend_servers["mlflow"]
    experiment = _experiment(mlflow.url, "weather")
    run_weather_agent(
        tmp_path / "agent", mlflow.url + "/v1/traces", f"x-mlflow-experiment-id={experiment}"
    )
    _run_guide("mlflow.md", {"MLFLOW_TRACKING_URI": mlflow.url}, tmp_path)
    assert "get_current_weather" in (tmp_path / "golden" / "weather.yaml").read_text()


@pytest.fixture(scope="module")
def mlflow_native(backend_servers: dict[str, Server], tmp_path_factory: pytest.TempPathFactory):
    """A trace MLflow's own tracing made (``mlflow.openai.autolog``, ``@mlflow.trace``: MLflow's
    attributes only), pulled with ``import --from mlflow``: its inspect document."""
    mlflow = backend_servers["mlflow"]
    command = [str(backends_python()), str(REPO / "tests/sources/mlflow_agent.py"), mlflow.url]
    command += ["native", str(cassette_path(WEATHER))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    trace_id = done.stdout.strip().splitlines()[-1]
    db = str(tmp_path_factory.mktemp("native") / "store.db")
    _cli(
        "import", "--from", "mlflow", "--url", mlflow.url, "--source-trace-id", trace_id, "--db", db
    )
    (pulled,) = _inspect("--db", db)
    return pulled


def test_mlflow_native_spans_read_user_input_answer_and_tokens(mlflow_native: dict) -> None:
    assert mlflow_native["user_inputs"] == [WEATHER_QUESTION]
    assert mlflow_native["final_output"].startswith("Today, the weather in Seattle is 50")
    assert [(c["input_tokens"], c["output_tokens"]) for c in mlflow_native["llm_calls"]] == [
        (75, 51),
        (99, 25),
    ]


def test_mlflow_native_spans_read_tool_calls(mlflow_native: dict) -> None:
    assert [(c["name"], c["arguments"], c["result"]) for c in mlflow_native["tool_calls"]] == [
        ("get_current_weather", {"location": "Seattle, WA"}, "50 degrees and raining"),
        ("get_current_weather", {"location": "San Francisco, CA"}, "70 degrees and sunny"),
    ]
