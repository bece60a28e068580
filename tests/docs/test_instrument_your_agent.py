"""Issue 35, "must show": the getting-started page's agent, instrumented with the GenAI
instrumentation's defaults (no message content), run through ``tracegrade run`` on the page's
three-case dataset. The console report (no ``-v``) names the missing content and the switch
first and on each case's line; tool names are still scored; no rate reads 0% for lack of
data. The agent and the dataset are the page's own blocks (``file=...``), so the page and
this test cannot drift apart; the page's blocks themselves run in tests/docs/test_examples.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.openai_server import ScriptedOpenAI
from tests.support.weather_model import weather_model

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "getting-started" / "instrument-your-agent.md"
SWITCH = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def page_file(name: str) -> str:
    """The text of the page's block written to ``name`` (```` ```LANG ... file=NAME ````)."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"```\w+[^\n]*\bfile={re.escape(name)}[^\n]*\n(.*?)```", text, re.S)
    assert found, f"no block with file={name} on {PAGE.name}"
    return found.group(1)


def test_the_default_instrumentation_says_content_is_missing_and_still_scores_tools(tmp_path):
    for name in ("weather_agent.py", "weather.yaml"):
        (tmp_path / name).write_text(page_file(name), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRACEGRADE_"))}
    with ScriptedOpenAI(weather_model) as model:  # type: ignore[arg-type]
        env.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="scripted", COLUMNS="200")
        done = subprocess.run(
            [sys.executable, "-m", "tracegrade", "run", "weather.yaml"]
            + ["--agent-cmd", f"{sys.executable} weather_agent.py", "--json", "run.json"]
            + ["--db", "t.db"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    # said first, once, right under the header, with the switch to set
    assert lines[1].startswith("3 of 3 case(s): message content not captured: set " + SWITCH)
    assert done.stdout.count("tool names and order, call counts, budgets and errors") == 1
    table = done.stdout[done.stdout.index("cases without message content") :]
    for case in ("lima", "paris", "no-city"):
        row = next(line for line in table.splitlines() if line.startswith(f"│ {case} "))
        assert "message content not captured" in row, row
    # tool names are scored: the expected calls were made, the forbidden one was not
    document = json.loads((tmp_path / "run.json").read_text())
    scores = {c["case_id"]: c["scores"] for c in document["cases"]}
    assert {case: s["tool_correctness"] for case, s in scores.items()} == {
        "lima": 1.0,
        "paris": 1.0,
        "no-city": 1.0,
    }
    assert scores["lima"]["tool_arguments"] is None  # arguments are content: unknown, not 0
    # no rate reads 0% for lack of data
    assert document["summary"]["hallucination_rate"] is None
    words = " ".join(done.stdout.split())
    assert "hallucination rate n/a" in words
    assert not re.search(r"(?<![\d.])0(\.0)?%", words), words
