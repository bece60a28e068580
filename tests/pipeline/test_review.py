"""The review loop on real stores: conversations sent to the real receiver by the SDK's
exporter, a queue built by rule, two reviewers claiming at once without overlap (SQLite and
PostgreSQL), labels kept with who and when, exported and imported, and a reviewed conversation
promoted to a case that loads and passes on its own trace."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.receiver import http_export, running
from tests.support.sdk import agent_turn, record
from tests.support.sdk_pipelines import span_exporter
from tracegrade.config import load_config
from tracegrade.curate.promote import CaseEdits
from tracegrade.dataset import load_dataset
from tracegrade.errors import DatasetError, StoreError
from tracegrade.otlp.transcripts import to_request
from tracegrade.pipeline._promote import promote
from tracegrade.pipeline._score import evaluate_dataset
from tracegrade.pipeline.reading import traces_by_id
from tracegrade.pipeline.review import (
    LabelInput,
    QueueRule,
    build_queue,
    export_labels,
    import_labels,
    next_item,
    queue_progress,
    record_label,
    skip_item,
)
from tracegrade.store import review as queue_store
from tracegrade.store.datasets import get_dataset
from tracegrade.store.traces import Store
from tracegrade.web.pages import review_view

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


def _send(location: str, count: int, *, thumbs_down: set[int]) -> list[str]:
    """``count`` one-turn conversations through the real receiver; negative feedback (POST
    /v1/feedback) on those in ``thumbs_down``. Returns their trace ids in order."""
    turns = [
        record(lambda t, i=i: agent_turn(t, f"question {i}", f"answer {i}")) for i in range(count)
    ]
    ids = [f"{next(s for s in spans if s.parent is None).context.trace_id:032x}" for spans in turns]
    with running(location) as receiver:
        exporter = span_exporter("http", receiver)
        assert exporter.export([s for spans in turns for s in spans]).name == "SUCCESS"
        exporter.shutdown()
        for i in sorted(thumbs_down):
            body = {"trace_id": ids[i], "label": "thumbs_down"}
            assert httpx.post(f"{receiver.http_endpoint}/v1/feedback", json=body).status_code == 200
    return ids


def test_a_queue_built_by_rule_hands_items_to_two_reviewers_without_overlap(store_location) -> None:
    negative = {1, 2, 4, 5, 7, 8, 10, 11}
    ids = _send(store_location, 12, thumbs_down=negative)
    built = build_queue(store_location, "unhappy", QueueRule(feedback="negative"), "lead")
    assert (built.considered, built.items) == (12, len(negative))
    claimed: dict[str, list[str]] = {"ana": [], "ben": []}
    start = threading.Barrier(2)

    def review(reviewer: str) -> None:
        with Store(store_location) as store:
            start.wait()
            while (item := next_item(store, "unhappy", reviewer)) is not None:
                claimed[reviewer].append(item.trace_ids[0])
                record_label(
                    store,
                    LabelInput(
                        item.trace_ids,
                        reviewer,
                        "fail",
                        queue="unhappy",
                        conversation=item.conversation,
                    ),
                )

    threads = [threading.Thread(target=review, args=(name,)) for name in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not set(claimed["ana"]) & set(claimed["ben"])
    assert sorted(claimed["ana"] + claimed["ben"]) == sorted(ids[i] for i in negative)
    with Store(store_location) as store:
        assert queue_progress(store, "unhappy") == {"open": 0, "claimed": 0, "done": 8, "total": 8}
        labels = queue_store.labels(store.db)
    assert {(label.reviewer, label.verdict) for label in labels} <= {
        ("ana", "fail"),
        ("ben", "fail"),
    }
    assert all(label.created_at > 0 and label.queue == "unhappy" for label in labels)


def test_a_held_item_comes_back_to_its_reviewer_and_a_skipped_one_goes_to_the_other(
    tmp_path,
) -> None:
    location = str(tmp_path / "claims.db")
    _send(location, 3, thumbs_down=set())
    build_queue(location, "all", QueueRule(), "lead")
    with Store(location) as store:
        first = next_item(store, "all", "ana")
        again = next_item(store, "all", "ana")  # a reload does not take a second item
        assert again.conversation == first.conversation and again.lease_until >= first.lease_until
        other = next_item(store, "all", "ben")
        assert other is not None and other.conversation != first.conversation
        skip_item(store, "all", first.conversation, "ana")
        assert next_item(store, "all", "ana").conversation not in (
            first.conversation,
            other.conversation,
        )
        assert next_item(store, "all", "carl").conversation == first.conversation
        with pytest.raises(StoreError, match="no review queue 'nope'"):
            next_item(store, "nope", "ana")
    with pytest.raises(StoreError, match="exists"):
        build_queue(location, "all", QueueRule(), "lead")


def test_rules_combine_filters_and_signals(tmp_path) -> None:
    location = str(tmp_path / "rules.db")
    _send(location, 6, thumbs_down={0, 3})
    assert build_queue(location, "sample", QueueRule(sample=2), None).items == 2
    assert build_queue(location, "other-service", QueueRule(service="nobody"), None).items == 0
    assert build_queue(location, "any-fb", QueueRule(feedback="any", limit=1), None).items == 1
    failing = build_queue(location, "failing", QueueRule(failed_scorers=["errors"]), None)
    assert failing.items == 0  # the example turns' tool calls all succeed
    with Store(location) as store:
        reasons = [item.reason for item in queue_store.items(store.db, "any-fb")]
    assert reasons == ["1 feedback"]


def test_labels_are_exported_and_imported_back_without_loss_or_doubles(tmp_path) -> None:
    location = str(tmp_path / "labels.db")
    ids = _send(location, 2, thumbs_down=set())
    with Store(location) as store:
        record_label(
            store,
            LabelInput(
                [ids[0]],
                "ana",
                "fail",
                {"tools_right": "fail"},
                "wrong tool",
                {"must_not_contain": ["refund"]},
            ),
        )
    assert export_labels(location, tmp_path / "labels.jsonl") == 1
    line = json.loads((tmp_path / "labels.jsonl").read_text())
    assert line["reviewer"] == "ana" and line["axes"] == {"tools_right": "fail"}
    assert (
        line["schema_version"] == "tracegrade.label/1" and line["conversation"] == f"trace:{ids[0]}"
    )
    other = str(tmp_path / "other.db")
    bad = (
        '{"trace_ids": [], "reviewer": "x", "verdict": "pass"}\n'
        '{"trace_ids": ["ab"], "reviewer": "x", "verdict": "maybe"}\n'
    )
    (tmp_path / "mixed.jsonl").write_text((tmp_path / "labels.jsonl").read_text() + bad)
    first, again = (
        import_labels(other, tmp_path / "mixed.jsonl"),
        import_labels(other, tmp_path / "mixed.jsonl"),
    )
    assert (first.added, first.duplicates, [e.line for e in first.errors]) == (1, 0, [2, 3])
    assert "mixed.jsonl:3: verdict" in str(first.errors[1])
    assert (again.added, again.duplicates) == (0, 1)
    with Store(other) as store:
        (label,) = queue_store.labels(store.db)
    assert {**label.to_dict(), "schema_version": "tracegrade.label/1"} == line


@pytest.fixture
def tau_store(tmp_path) -> tuple[str, list[str]]:
    """Three tau-bench conversations (multi-turn, one trace each) sent to the real receiver as
    OTLP/HTTP protobuf exports."""
    location = str(tmp_path / "tau.db")
    with running(location) as receiver:
        for record in json.loads(TAU.read_text())[:3]:
            body = to_request(record, messages_key="traj").SerializeToString()
            assert http_export(receiver, "traces", body).status_code == 200
    with Store(location) as store:
        return location, store.trace_ids()


def test_a_promoted_case_loads_and_passes_on_its_own_trace(tau_store, tmp_path) -> None:
    location, ids = tau_store
    target = tmp_path / "golden.yaml"
    target.write_text("# reviewed cases\nname: golden\ncases: []\n")
    with Store(location) as store:
        view = review_view(store, [ids[0]], load_config())
        record_label(store, LabelInput([ids[0]], "ana", "pass", note="right answer"))
        performed = [t for t in view["tools"] if t["default"] == "name"]
        picks = {performed[0]["index"]: "arguments"}
        promoted = promote(
            store,
            [ids[0]],
            str(target),
            "ana",
            CaseEdits(tool_calls=picks, must_not_contain=["I cannot help"]),
        )
        with pytest.raises(DatasetError, match="has a case"):
            promote(store, [ids[0]], str(target), "ana", CaseEdits())
        traces = traces_by_id(store, ids)
    assert target.read_text().startswith("# reviewed cases")
    dataset = load_dataset(target)
    (case,) = dataset.cases
    assert case.turns and len(case.turns) == len(traces[ids[0]].user_inputs) > 1  # multi-turn
    assert case.label == "pass" and case.metadata["reviewed_by"] == "ana"
    assert case.expected_tool_calls[0].name == performed[0]["name"]
    assert case.must_not_contain == ["I cannot help"]
    assert promoted.case["id"] == case.id
    result = evaluate_dataset([traces[ids[0]]], dataset, judge=False).results[0]
    assert result.trace_id == ids[0] and result.passed, result.reasons


def test_a_case_promoted_to_a_stored_dataset_is_there(tau_store) -> None:
    location, ids = tau_store
    with Store(location) as store:
        promote(store, [ids[1]], "store:reviewed", "ben", CaseEdits(case_id="kept", label="fail"))
        text = get_dataset(store, "reviewed").text
    assert "id: kept" in text and "label: fail" in text


def _line(**fields: object) -> str:
    return json.dumps({"trace_ids": ["ab" * 16], "reviewer": "ana", "verdict": "fail", **fields})


def test_hostile_label_files_are_refused_by_field_and_notes_round_trip(
    store_location, tmp_path
) -> None:
    """Issue 40 item 9: ``created_at: 1e300`` was stored (the review item page and agreement
    then answered 500); a note holding U+2028 / U+0085 was exported as JSONL that import
    refused; a 100 MB note was accepted. Each bad line is reported with its file, line and
    field and skipped; the good ones are stored; every exported note reads back."""
    from tracegrade.pipeline.review import MAX_LINE_BYTES, MAX_NOTE_CHARS

    hostile = tmp_path / "hostile.jsonl"
    with open(hostile, "w", encoding="utf-8", newline="\n") as out:
        out.write(_line(created_at=1e300) + "\n")
        out.write(_line(created_at=-5.0) + "\n")
        out.write(_line(note="n" * (MAX_NOTE_CHARS + 1)) + "\n")
        out.write(_line(note="x" * (MAX_LINE_BYTES + 10)) + "\n")
        out.write(_line(trace_ids=["cd" * 16] * 1_001) + "\n")
        out.write(_line(created_at=1764000000.0, note="kept") + "\n")
    report = import_labels(store_location, hostile)
    reasons = [str(error) for error in report.errors]
    assert [e.line for e in report.errors] == [1, 2, 3, 4, 5], reasons
    assert "hostile.jsonl:1: created_at 1e+300: a Unix time in seconds" in reasons[0]
    assert "hostile.jsonl:3: note: 16,385 characters, at most 16,384" in reasons[2]
    assert f"hostile.jsonl:4: line: longer than {MAX_LINE_BYTES:,} bytes" in reasons[3]
    assert "hostile.jsonl:5: trace_ids: 1001 ids" in reasons[4]
    assert report.added == 1
    with Store(store_location) as store:
        with pytest.raises(Exception, match="created_at inf"):
            record_label(store, LabelInput(["ab" * 16], "ana", "pass", created_at=float("inf")))
        note = "line\u2028sep\u2029para\x85next\x1cfile\x0bvt\r\nend"
        record_label(store, LabelInput(["ef" * 16], "bo", "pass", note=note, created_at=1.0))
        stored = [label.to_dict() for label in queue_store.labels(store.db)]
    assert [label["note"] for label in stored] == [note, "kept"]
    exported = tmp_path / "labels.jsonl"
    assert export_labels(store_location, exported) == 2
    assert len(exported.read_text(encoding="utf-8").splitlines()) == 2  # any reader's lines
    other = str(tmp_path / "other.db")
    again = import_labels(other, exported)
    assert (again.added, again.errors) == (2, [])
    with Store(other) as store:
        assert [label.to_dict() for label in queue_store.labels(store.db)] == stored
    from starlette.testclient import TestClient

    from tracegrade.web import UiConfig, create_app

    ids = _send(other, 1, thumbs_down=set())  # a label stored before the checks existed
    with Store(other) as store:
        queue_store.add_label(
            store.db, queue_store.Label(f"trace:{ids[0]}", (ids[0],), "ann", "fail", 1e300)
        )
    app = create_app(UiConfig(db=other, index_traces=False))
    unix_s = app.state.ui.templates.env.filters["unix_s"]
    assert (unix_s(1e300), unix_s(0.0)) == ("1e+300 (not a time)", "1970-01-01 00:00:00")
    with TestClient(app, base_url="http://localhost") as client:
        page = client.get("/agreement")
        assert page.status_code == 200 and "1e+300 (not a time)" in page.text
    app.state.ui.close()
