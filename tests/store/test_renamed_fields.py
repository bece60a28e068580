"""Issue 39 item 4: the run document's ``run.config_sources`` (the config files read) is
``run.config_files``, an attempt's ``followup_sources`` its ``followup_writers`` and a follow-up
message's ``source`` its ``written_by`` ("source" is where traces come from). A run stored or
written before the renames still reads, on both backends, under the current names and in
their place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tracegrade.cli import cli
from tracegrade.run_document import AttemptEntry, RunDocument, read_head, with_current_names
from tracegrade.store.runs import iter_run_cases, load_run, load_run_head, run_headers, save_run
from tracegrade.store.traces import Store

REFERENCES = Path(__file__).parents[1] / "data" / "reference_documents"
REFERENCE = REFERENCES / "score-main.json"


def _written_before_the_rename() -> tuple[dict[str, Any], list[str]]:
    """A whole run document as tracegrade wrote it with ``config_sources``, and the keys of
    its ``run`` as they read now."""
    current = json.loads(REFERENCE.read_text(encoding="utf-8"))
    keys = list(current["run"])
    run = {("config_sources" if k == "config_files" else k): v for k, v in current["run"].items()}
    run["run_id"] = "r1"
    return {**current, "run": run}, keys


def test_a_stored_run_with_config_sources_reads_as_config_files(store_location):
    old, keys = _written_before_the_rename()
    files = old["run"]["config_sources"]
    with Store(store_location) as store:
        save_run(store, old)
        whole = load_run(store, "r1")
        assert list(whole["run"]) == keys
        assert whole["run"]["config_files"] == files
        assert whole["cases"] == old["cases"]
        assert read_head(load_run_head(store, "r1")).run.config_files == files
        assert run_headers(store)[0]["run"]["config_files"] == files
    shown = CliRunner().invoke(cli, ["runs", "show", "r1", "--json", "--db", store_location])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["run"]["config_files"] == files
    assert "config_sources" not in shown.output


def test_a_run_document_file_with_config_sources_reads_as_config_files():
    old, keys = _written_before_the_rename()
    document = RunDocument.from_json(old)
    assert document.run.config_files == old["run"]["config_sources"]
    assert document.run.model_extra == {}
    written = document.to_json()["run"]
    assert "config_sources" not in written
    assert written["config_files"] == old["run"]["config_sources"]
    assert with_current_names(old)["run"]["config_files"] == written["config_files"]
    assert list(old["run"]) == keys


def _attempts_written_before_the_rename() -> tuple[dict[str, Any], dict[str, Any]]:
    """A ``tracegrade run`` document whose first attempt has a judge's follow-up, as
    written before the rename, and that attempt as it reads now."""
    doc = json.loads((REFERENCES / "run-agent.json").read_text(encoding="utf-8"))
    doc["run"]["run_id"] = "r2"
    attempt = doc["cases"][0]["attempts"][0]
    message = {"written_by": "judge", "question": "Which lamp?", "reply": "The Aurora"}
    attempt.update(followups=1, followup_writers=["judge"], followup_messages=[message])
    attempt.update(agent_ms=1.0, settle_ms=0.0, score_ms=0.0, trace_ids=["t1"])  # unmasked
    current = json.loads(json.dumps(attempt))
    old = {("followup_sources" if k == "followup_writers" else k): v for k, v in attempt.items()}
    old["followup_messages"] = [
        {"source": "judge", "question": "Which lamp?", "reply": "The Aurora"}
    ]
    doc["cases"][0]["attempts"][0] = old
    return doc, current


def test_a_stored_attempt_with_followup_sources_reads_with_its_current_names(store_location):
    old, current = _attempts_written_before_the_rename()
    with Store(store_location) as store:
        save_run(store, old)
        assert load_run(store, "r2")["cases"][0]["attempts"][0] == current
        assert list(load_run(store, "r2")["cases"][0]["attempts"][0]) == list(current)
        streamed = next(iter_run_cases(store, "r2"))
    assert streamed["attempts"][0] == current
    attempt = AttemptEntry.model_validate(old["cases"][0]["attempts"][0])
    assert attempt.followup_writers == ["judge"]
    assert attempt.followup_messages[0].written_by == "judge"
    assert attempt.model_extra == {} and attempt.followup_messages[0].model_extra == {}
    assert with_current_names(old)["cases"][0]["attempts"][0] == current
