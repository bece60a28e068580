"""``tracegrade score`` with the judge (cache across runs, credentials checked at start, judge
usage apart from the agent's) and ``tracegrade judge-check`` (accuracy, Cohen's kappa)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from tests.judge.conftest import CONTRADICTION, TAU_TRACES
from tests.support.judge_replies import verdict
from tests.support.openai_server import error, json_reply
from tracegrade.cli import cli

CREDENTIAL_VARS = (
    "TRACEGRADE_JUDGE_BASE_URL",
    "TRACEGRADE_JUDGE_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "TRACEGRADE_JUDGE_MODEL",
)


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch):
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)


def _env(server) -> dict[str, str]:
    return {"TRACEGRADE_JUDGE_BASE_URL": server.base_url, "TRACEGRADE_JUDGE_API_KEY": "test-key"}


def _write_dataset(tmp_path, tau_traces, ids, **extra) -> str:
    cases = [
        {"id": f"task-{n}", "input": tau_traces[i].user_inputs[0], **extra.get(i, {})}
        for n, i in enumerate(ids)
    ]
    path = tmp_path / "judged.yaml"
    path.write_text(yaml.safe_dump({"name": "judged", "cases": cases}))
    return str(path)


def _score(env, *args):
    return CliRunner().invoke(cli, ["score", str(TAU_TRACES), *map(str, args)], env=env)


@pytest.fixture
def judged(tmp_path, tau_traces) -> str:
    ids = [CONTRADICTION, *[t for t in tau_traces if t != CONTRADICTION][:2]]
    rubric = {"judge": {"rubric": "faithfulness", "threshold": 0.6}}
    return _write_dataset(tmp_path, tau_traces, ids, **{i: rubric for i in ids})


def test_second_score_of_the_same_traces_makes_no_judge_call(judge_server, judged, tmp_path):
    server = judge_server(lambda body: json_reply(verdict(0.9)))
    first = _score(_env(server), "--dataset", judged, "--json", tmp_path / "1.json")
    assert first.exit_code in (0, 1), first.output
    assert len(server.requests) == 3
    second = _score(_env(server), "--dataset", judged, "--json", tmp_path / "2.json")
    assert second.exit_code == first.exit_code, second.output
    assert len(server.requests) == 3
    judge = json.loads((tmp_path / "2.json").read_text())["summary"]["judge"]
    assert (judge["calls"], judge["cached"], judge["input_tokens"], judge["cost_usd"]) == (
        0,
        3,
        0,
        0.0,
    )


def test_judge_usage_and_cost_are_reported_apart_from_the_agent(judge_server, judged, tmp_path):
    server = judge_server(lambda body: json_reply(verdict(0.9)))
    _score(_env(server), "--dataset", judged, "--json", tmp_path / "judged.json")
    _score({}, "--dataset", judged, "--no-judge", "--json", tmp_path / "plain.json", "--no-save")
    judged_doc = json.loads((tmp_path / "judged.json").read_text())
    plain_doc = json.loads((tmp_path / "plain.json").read_text())
    summary = judged_doc["summary"]
    assert summary["judge"] == {
        "calls": 3,
        "cached": 0,
        "input_tokens": 75,
        "output_tokens": 36,
        "cost_usd": pytest.approx((75 * 2.5 + 36 * 10.0) / 1e6),
        "errors": 0,
        "models": ["gpt-4o"],
    }
    for key in ("input_tokens", "output_tokens", "cost_usd"):
        assert summary[key] == plain_doc["summary"][key]  # the agent's, untouched by the judge
    assert plain_doc["summary"]["judge"] is None  # --no-judge: skipped, nothing spent
    assert all(c["scores"]["judge"] is None for c in plain_doc["cases"])
    assert "judge disabled (--no-judge)" in plain_doc["cases"][0]["details"]["judge"]["reason"]


def test_console_shows_judge_line_and_judge_error(judge_server, judged):
    server = judge_server(lambda body: error(500, "boom", retry_after=0.01))
    result = CliRunner().invoke(
        cli,
        ["score", str(TAU_TRACES), "--dataset", judged, "--no-save"],
        env={**_env(server), "COLUMNS": "200"},
    )
    assert result.exit_code == 1
    assert "judge gpt-4o: 0 call(s) (0 verdict(s) from cache)" in result.output
    assert "3 judge error(s)" in result.output
    assert "judge error: judge endpoint answered HTTP 500" in result.output


def test_missing_credentials_is_one_error_at_start(judge_server, judged):
    result = _score({}, "--dataset", judged)
    assert result.exit_code == 2
    assert result.output.count("error:") == 1
    assert (
        "error: the LLM judge (model 'gpt-4o') needs an API key: set TRACEGRADE_JUDGE_API_KEY"
        in result.output
    )


def test_no_rubric_needs_no_credentials(tmp_path, tau_traces):
    plain = _write_dataset(tmp_path, tau_traces, [CONTRADICTION])
    result = _score({}, "--dataset", plain, "--no-save", "--json", tmp_path / "r.json")
    assert result.exit_code in (0, 1), result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"]["judge"] is None and "judge" not in doc["cases"][0]["scores"]


def test_reference_free_judge_runs_faithfulness_on_every_trace(judge_server, tmp_path):
    server = judge_server(lambda body: json_reply(verdict(1.0)))
    result = _score(
        _env(server), "--judge", "--limit", "4", "--no-save", "--json", tmp_path / "r.json"
    )
    assert result.exit_code in (0, 1), result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    judged = [c for c in doc["cases"] if c["scores"]["judge"] is not None]
    assert len(judged) == len(server.requests) >= 3
    assert all(c["details"]["judge"]["details"]["rubric"] == "faithfulness" for c in judged)


# --- judge-check --------------------------------------------------------------------------------


def _labelled(tmp_path, tau_traces) -> tuple[str, dict[str, float]]:
    """Five labelled cases; the scripted judge agrees on four (labels P P P F F, judge
    P P F F F)."""
    ids = [t for t, trace in tau_traces.items() if trace.final_output][:5]
    labels = ["pass", "pass", "pass", "fail", "fail"]
    scores = [0.9, 0.8, 0.3, 0.2, 0.6]
    path = _write_dataset(
        tmp_path, tau_traces, ids, **{i: {"label": lab} for i, lab in zip(ids, labels, strict=True)}
    )
    return path, {tau_traces[i].user_inputs[0]: s for i, s in zip(ids, scores, strict=True)}


def test_judge_check_reports_accuracy_and_kappa(judge_server, tmp_path, tau_traces):
    dataset, by_input = _labelled(tmp_path, tau_traces)

    def script(body):
        prompt = body["messages"][1]["content"]
        return json_reply(verdict(next(s for text, s in by_input.items() if text in prompt)))

    server = judge_server(script)
    result = CliRunner().invoke(
        cli,
        ["judge-check", dataset, str(TAU_TRACES), "--json", str(tmp_path / "a.json")],
        env={**_env(server), "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["compared"] == 5 and report["accuracy"] == pytest.approx(0.8)
    assert report["kappa"] == pytest.approx((0.8 - 0.48) / 0.52)
    assert report["confusion"] == {"pass/pass": 2, "pass/fail": 1, "fail/pass": 0, "fail/fail": 2}
    assert "accuracy 0.80 · Cohen's kappa 0.62" in result.output
    assert len(server.requests) == 5
    below = CliRunner().invoke(
        cli, ["judge-check", dataset, str(TAU_TRACES), "--min-kappa", "0.7"], env=_env(server)
    )
    assert below.exit_code == 1 and len(server.requests) == 5  # answered from the cache


def test_judge_check_needs_labels(judge_server, tmp_path, tau_traces):
    plain = _write_dataset(tmp_path, tau_traces, [CONTRADICTION])
    result = CliRunner().invoke(
        cli, ["judge-check", plain, str(TAU_TRACES)], env=_env(judge_server([]))
    )
    assert result.exit_code == 2 and "no case carries a 'label: pass|fail'" in result.output


def test_the_config_file_sets_judge_defaults_and_the_environment_wins(tmp_path, monkeypatch):
    from tracegrade.config import load_config
    from tracegrade.judge.settings import resolve_settings

    path = tmp_path / "tracegrade.yaml"
    path.write_text("judge: {model: judge-from-config, timeout_s: 7, evidence_tokens: 900}\n")
    config = load_config(path)
    settings = resolve_settings(None, env={}, config=config.judge)
    assert (settings.model, settings.timeout_s, settings.evidence_tokens) == (
        "judge-from-config",
        7,
        900,
    )
    assert (
        resolve_settings(
            None, env={"TRACEGRADE_JUDGE_MODEL": "from-env"}, config=config.judge
        ).model
        == "from-env"
    )
    assert (
        resolve_settings(
            "from-flag", env={"TRACEGRADE_JUDGE_MODEL": "e"}, config=config.judge
        ).model
        == "from-flag"
    )
    path.write_text("judge: {timeout_s: -1}\n")
    import pytest

    from tracegrade.errors import ConfigError

    with pytest.raises(ConfigError, match="judge.timeout_s"):
        load_config(path)


def test_10_6_13_2_a_case_editor_case_passes_on_the_judges_verdict(
    judge_server, tau_traces, tmp_path
):
    """Issue 10 item 6 with issue 13 item 2: a case in the case editor's shape (``name``,
    ``prompt``, ``judge_prompt``, ``judge_threshold``) and no other expectation is scored from
    the command line, and passes on the judge's 0.9 over its threshold 0.7."""
    dataset = tmp_path / "editor.yaml"
    dataset.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Flight change",
                    "prompt": tau_traces[CONTRADICTION].user_inputs[0],
                    "judge_prompt": "Tells the user what was changed and what it cost.",
                    "judge_threshold": 0.7,
                }
            ]
        )
    )
    server = judge_server(lambda body: json_reply(verdict(0.9)))
    out = tmp_path / "r.json"
    result = _score(_env(server), "--dataset", dataset, "--json", out, "--no-save")
    assert result.exit_code == 0, result.output
    (case,) = json.loads(out.read_text())["cases"]
    assert case["passed"] and case["score"] == 0.9 and case["axes"] == {"judge": 0.9}
    assert not any("not scored" in r for r in case["reasons"])
    assert any(n.startswith("groundedness not scored") for n in case["notes"])
