"""The import, inspect and lint commands end to end (real files, real SQLite store)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tracegrade.cli import cli

DATASETS = Path(__file__).parents[2] / "datasets"
TAU = DATASETS / "tau-bench" / "gpt-4o-airline-even-tasks.json"
OTLP = DATASETS / "tau-bench-otlp"


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_import_then_inspect_the_store(_isolated_store):
    result = run("import", TAU, "--messages-key", "traj")
    assert result.exit_code == 0, result.output
    assert "imported 1840 new span(s)" in result.output and _isolated_store.exists()
    result = run("inspect", "--json")
    traces = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(traces) == 100
    assert sum(len(t["tool_calls"]) for t in traces) == 577


def test_inspect_tree_shows_tool_calls_tokens_and_answer():
    result = run("inspect", OTLP / "openinference" / "traces.jsonl.gz", "--limit", "1")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "LLM #1" in out and "tool get_user_details" in out and "answer" in out and "in /" in out
    assert out.strip().endswith("1 trace(s), 15 LLM call(s), 8 tool call(s)")


def test_inspect_reads_logs_beside_traces_without_import():
    result = run("inspect", "--json", OTLP / "otel_genai_default" / "traces.jsonl.gz")
    first = json.loads(result.stdout.splitlines()[0])
    assert first["user_inputs"] and first["tool_calls"][0]["arguments"] == {
        "user_id": "mia_li_3668"
    }
    assert "genai-events" in first["conventions"]


def test_inspect_trace_id_filter_and_schema():
    trace_id = "11a7a50f6c121793abe4f59a02f3886d"
    result = run(
        "inspect", "--json", "--trace-id", trace_id, OTLP / "otel_genai_default" / "traces.jsonl.gz"
    )
    assert [json.loads(x)["trace_id"] for x in result.stdout.splitlines()] == [trace_id]
    schema = json.loads(run("inspect", "--schema").stdout)
    assert schema["$id"] == "tracegrade.agent_trace/1"
    assert {"trace_id", "user_inputs", "final_output", "llm_calls", "tool_calls", "gaps"} <= set(
        schema["properties"]
    )


def test_bad_lines_exit_2_and_import_the_rest(tmp_path):
    good = OTLP / "traceloop" / "traces.jsonl.gz"
    import gzip

    with gzip.open(good, "rt") as text:
        lines = text.read().splitlines()[:2]
    path = tmp_path / "mixed.jsonl"
    path.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2] + "\n")
    result = run("import", path)
    assert result.exit_code == 2
    assert f"{path}:2: invalid JSON" in result.stderr
    assert json.loads(run("inspect", "--json").stdout.splitlines()[0])["trace_id"]


def test_inspect_and_lint_print_each_input_error_once(tmp_path):
    """Issue 27, defect 12: inspect (and lint) printed an error as it was met and again at
    the end. A bad line mid-way and a file that is no trace file at all, with and without
    --limit (which stops reading early)."""
    import gzip

    with gzip.open(OTLP / "traceloop" / "traces.jsonl.gz", "rt") as text:
        lines = text.read().splitlines()[:2]
    mixed, alien = tmp_path / "mixed.jsonl", tmp_path / "alien.jsonl"
    mixed.write_text(lines[0] + "\nnot json\n" + lines[1] + "\n")
    alien.write_text('{"bad": 1}\n')
    for args in (["inspect"], ["inspect", "--json"], ["lint"], ["inspect", "--limit", "1"]):
        result = run(*args, mixed, alien)
        assert result.exit_code == 2, (args, result.output)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == len(set(errors)) == 2, (args, result.stderr)
        assert any(f"{mixed}:2:" in e for e in errors) and any(str(alien) in e for e in errors)


def test_lint_reports_missing_inputs_with_exit_1():
    result = run("lint", "--json", OTLP / "otel_genai_default" / "traces.jsonl.gz")
    assert result.exit_code == 0  # partial results are not missing inputs
    reports = [json.loads(x) for x in result.stdout.splitlines()]
    status = [{c["input"]: c["status"] for c in r["checks"]} for r in reports]
    assert sum(s["tool_results"] == "partial" for s in status) == 8
    assert all(
        s["conversation_id"] == "partial" for s in status
    )  # openai-v2 sets no conversation id
    result = run("lint", TAU, "--messages-key", "traj", "--limit", "2")
    assert result.exit_code == 1
    assert "missing" in result.stdout and "synthetic" in result.stdout


def test_missing_messages_key_is_a_clear_error(tmp_path):
    path = tmp_path / "chats.json"
    path.write_text(json.dumps([{"traj": [{"role": "user", "content": "hi"}]}]))
    result = run("inspect", path)
    assert result.exit_code == 2
    assert (
        "no message list under 'messages' (list-valued keys: traj); use --messages-key"
        in result.stderr
    )


def test_unknown_option_is_usage_error():
    assert run("inspect", "--bogus").exit_code == 2
