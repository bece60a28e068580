"""``tracegrade review`` and ``tracegrade agreement`` on tau-bench conversations, with the
recorded reward as the human label; ``judge-check --from-review`` needs a judge; ``users``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.tau_bench.convert import convert
from tracegrade.cli import cli
from tracegrade.pipeline._agreement import AgreementOptions, agreement, over_time
from tracegrade.pipeline.reading import traces_by_id
from tracegrade.store.traces import Store

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


def _invoke(*args: str, input: str | None = None):
    result = CliRunner().invoke(cli, list(args), input=input, env={"COLUMNS": "200"})
    return result


@pytest.fixture(scope="module")
def tau(tmp_path_factory) -> dict[str, Path]:
    """30 tau-bench conversations imported, with their rewards as labels (JSONL)."""
    out = tmp_path_factory.mktemp("tau-review")
    records = json.loads(TAU.read_text())[:30]
    (out / "thirty.json").write_text(json.dumps(records))
    convert(out / "thirty.json", out)
    db = out / "store.db"
    assert _invoke("import", str(out / "traces.jsonl"), "--db", str(db)).exit_code == 0
    with Store(db) as store:
        by_case = {
            str(t.root_attributes["tracegrade.case_id"]): t.trace_id
            for t in traces_by_id(store, store.trace_ids()).values()
        }
    with open(out / "labels.jsonl", "w") as labels:
        for r in records:
            case = f"task{r['task_id']}-trial{r['trial']}"
            line = {
                "trace_ids": [by_case[case]],
                "reviewer": "tau-bench",
                "verdict": "pass" if r["reward"] == 1 else "fail",
                "created_at": 1.7e9 + r["task_id"] * 86400,
            }
            labels.write(json.dumps(line) + "\n")
    result = _invoke("review", "import", str(out / "labels.jsonl"), "--db", str(db))
    assert result.exit_code == 0 and "imported 30 label(s)" in result.output, result.output
    return {"dir": out, "db": db, "dataset": out / "dataset.yaml"}


def test_agreement_reports_every_scorer_against_the_rewards(tau) -> None:
    result = _invoke(
        "agreement",
        "--db",
        str(tau["db"]),
        "--dataset",
        str(tau["dataset"]),
        "--json",
        str(tau["dir"] / "a.json"),
    )
    assert result.exit_code == 0, result.output
    assert "30 conversation(s): 30 labelled" in result.output
    report = json.loads((tau["dir"] / "a.json").read_text())
    rows = {row["rater"]: row for row in report["rows"] if row["reference"] == "labels"}
    assert {
        "overall",
        "tool_arguments",
        "tool_correctness",
        "production_rules.invented_values",
    } <= set(rows)
    overall = rows["overall"]
    assert overall["n"] == 30 and overall["accuracy"] >= 0.9
    with_interval = [r for r in rows.values() if r["kappa_low"] is not None]
    assert with_interval and all(
        r["kappa_low"] <= r["kappa"] <= r["kappa_high"] for r in with_interval
    )
    assert overall["both_fail"] + overall["both_pass"] == overall["agreed"]
    for row in report["rows"]:
        assert len(row["disagreements"]) == row["n"] - row["agreed"]
    assert "fail precision" in result.output and "disagrees with labels" in result.output


def test_agreement_over_time_buckets_by_label_time(tau) -> None:
    report = agreement(AgreementOptions(db=str(tau["db"]), dataset=str(tau["dataset"])))
    overall = next(r for r in over_time(report, bucket_s=10 * 86400) if r["rater"] == "overall")
    assert sum(b["n"] for b in overall["buckets"]) == 30 and len(overall["buckets"]) >= 2


def test_review_queue_next_label_show_export_and_promote(tau, tmp_path) -> None:
    db = str(tmp_path / "copy.db")
    _invoke("import", str(tau["dir"] / "traces.jsonl"), "--db", db)
    made = _invoke(
        "review",
        "queue",
        "tools",
        "--db",
        db,
        "--failed-scorer",
        "production_rules",
        "--limit",
        "3",
    )
    assert made.exit_code == 0 and "queue tools: " in made.output, made.output
    listed = _invoke("review", "queues", "--db", db)
    assert "tools" in listed.output and "failed_scorers" in listed.output
    shown = _invoke("review", "next", "tools", "--db", db, "--reviewer", "ana")
    assert shown.exit_code == 0 and "user:" in shown.output and "tool" in shown.output, shown.output
    trace_id = shown.output.split("tracegrade review label ", 1)[1].split()[0]
    labelled = _invoke(
        "review",
        "label",
        trace_id,
        "--db",
        db,
        "--verdict",
        "fail",
        "--queue",
        "tools",
        "--axis",
        "tools_right=fail",
        "--reviewer",
        "ana",
        "--note",
        "wrong flight",
    )
    assert labelled.exit_code == 0 and "fail by ana" in labelled.output
    bad = _invoke(
        "review", "label", trace_id, "--db", db, "--verdict", "fail", "--axis", "vibes=fail"
    )
    assert bad.exit_code == 2 and "axis vibes" in bad.output
    assert (
        "label fail by ana: wrong flight" in _invoke("review", "show", trace_id, "--db", db).output
    )
    exported = _invoke("review", "export", str(tmp_path / "l.jsonl"), "--db", db)
    assert "wrote 1 label(s)" in exported.output
    promoted = _invoke(
        "review",
        "promote",
        trace_id,
        "--db",
        db,
        "--dataset",
        str(tmp_path / "new.yaml"),
        "--reviewer",
        "ana",
    )
    assert promoted.exit_code == 0 and "added case" in promoted.output, promoted.output
    assert "label: fail" in (tmp_path / "new.yaml").read_text()


def test_judge_check_from_review_without_a_judge_key_says_so(tau, monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "TRACEGRADE_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = _invoke("judge-check", "--from-review", "--db", str(tau["db"]))
    assert result.exit_code == 2 and "key" in result.output.lower(), result.output
    assert "--from-review" in _invoke("judge-check", "--db", str(tau["db"])).output


def test_users_add_list_remove(tmp_path) -> None:
    db = str(tmp_path / "users.db")
    assert (
        "created account ana"
        in _invoke(
            "users", "add", "ana", "--db", db, "--password-stdin", input="correct horse\n"
        ).output
    )
    short = _invoke("users", "add", "ben", "--db", db, "--password-stdin", input="short\n")
    assert short.exit_code == 2 and "at least 8" in short.output
    assert _invoke("users", "list", "--db", db).output.split() == ["ana"]
    assert "removed" in _invoke("users", "remove", "ana", "--db", db).output
    assert _invoke("users", "remove", "ana", "--db", db).exit_code == 2


def test_promote_a_tool_call_out_of_range_exits_2_naming_the_range(tau, tmp_path) -> None:
    """Issue 35, defect 2: ``--tool-call INDEX=...`` past the conversation's calls."""
    with Store(tau["db"]) as store:
        trace = next(iter(traces_by_id(store, store.trace_ids()[:1]).values()))
    count = len(trace.tool_calls)
    dataset = tmp_path / "new.yaml"
    result = _invoke(
        "review", "promote", trace.trace_id, "--db", str(tau["db"]), "--dataset", str(dataset),
        "--tool-call", f"{count + 5}=name", "--reviewer", "ana",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: tool call {count + 5} out of range: ")
    assert f"has {count} tool call(s), INDEX 0-{count - 1} (0={trace.tool_calls[0].name}" in (
        result.stderr
    )
    assert result.stderr.count("\n") == 1 and not dataset.exists()
