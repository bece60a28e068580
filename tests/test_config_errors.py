"""Issue 35, defect 4: a config file's errors name the file, the line and the key, every
problem at once, an unknown key with the closest known one ("did you mean"), as dataset
errors do; the keys the production guide shows (``windows.thresholds.*``) are the real ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracegrade import load_config
from tracegrade.errors import ConfigError

GUIDE = Path(__file__).parents[1] / "docs" / "guides" / "production-scoring.md"


def test_every_problem_names_file_line_and_key_with_a_suggestion(tmp_path):
    path = tmp_path / "tracegrade.yaml"
    path.write_text(
        "threshold: 0.8\n"
        "wieghts: {groundedness: 1}\n"
        "windows:\n"
        "  min_traces: 0\n"
        "  thresholds:\n"
        "    failure_rte: 0.1\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).splitlines() == [
        f"{path}:2: field 'wieghts': unknown field; did you mean 'weights'?",
        f"{path}:4: field 'windows.min_traces': Input should be greater than or equal to 1",
        f"{path}:6: field 'windows.thresholds.failure_rte': unknown key; did you mean "
        "'failure_rate'? (known: failure_rate, hallucination_rate, tool_error_rate, "
        "p95_latency_ms, cost_per_trace_usd)",
    ]


def test_the_production_guide_shows_the_real_window_threshold_keys(tmp_path):
    text = GUIDE.read_text(encoding="utf-8")
    [block] = re.findall(r"```yaml config\n(# tracegrade.yaml\nwindows:.*?)```", text, re.S)
    path = tmp_path / "tracegrade.yaml"
    path.write_text(block)
    config = load_config(path)
    assert config.windows["thresholds"]["failure_rate"] == 0.1
    assert "`windows.thresholds`" in text and "(`failure_rate: 0.2`" not in text
