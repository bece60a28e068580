"""``tracegrade dataset build``: golden cases from real conversations (issue 13 item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from tests.curate.conftest import trace_id, turn
from tracegrade.cli import cli
from tracegrade.dataset import load_dataset
from tracegrade.otlp.files import write_jsonl
from tracegrade.store.traces import Store

REPO = Path(__file__).parents[2]
TAU = REPO / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"

ORDER = '{"order_id": "ORD-7781", "status": "shipped", "total": 149.99, "eta": "2026-11-30"}'


def build(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["dataset", "build", *args])
    return result.exit_code, result.output


def cases(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())["cases"]


def test_cases_from_tau_bench_conversations_load_and_carry_exact_write_calls(tmp_path):
    out = tmp_path / "tau.yaml"
    code, output = build(
        str(TAU), "--messages-key", "traj", "--out", str(out), "--exact-args", "book_reservation"
    )
    assert code == 0, output
    dataset = load_dataset(out)  # loads unchanged
    assert "100 of 100 conversation(s)" in output and len(dataset.cases) >= 90
    booked = [c for c in dataset.cases if c.expected_tool_calls]
    assert booked and all(
        call.name == "book_reservation" and call.required
        for c in booked
        for call in c.expected_tool_calls
    )
    assert all(c.strict_tools == ["book_reservation"] for c in dataset.cases)
    assert all("book_reservation" not in c.expected_tools for c in dataset.cases)
    assert all(c.metadata["review"] == "pending" for c in dataset.cases)
    assert all(c.turns and c.turns[0] == c.input for c in dataset.cases)


def test_expectations_come_from_what_the_trace_shows(tmp_path):
    traces = tmp_path / "t.jsonl"
    request = turn(
        "Where is my order ORD-7781?",
        "Order ORD-7781 shipped on its way: total $149.99, arriving 2026-11-30. I estimate 3 days.",
        [
            ("lookup_order", {"order_id": "ORD-7781"}, ORDER, None),
            ("notify", {"order_id": "ORD-7781"}, "", "TimeoutError"),
            ("track", {"carrier": "ups", "order_id": "ORD-7781"}, '{"days": 4}', None),
        ],
        root={"tracegrade.case_id": "where-is-my-order"},
    )
    write_jsonl(traces, [request])
    out = tmp_path / "d.yaml"
    code, output = build(str(traces), "--out", str(out), "--exact-args", "track")
    assert code == 0, output
    (case,) = cases(out)
    assert case["id"] == "where-is-my-order"
    assert case["expected_tools"] == ["lookup_order"]  # the failed notify is not expected
    assert case["expected_tool_calls"] == [
        {"name": "track", "arguments": {"carrier": "ups", "order_id": "ORD-7781"}, "required": True}
    ]
    assert case["must_contain"] == ["ORD-7781", "$149.99", "2026-11-30"]  # not the invented 3
    assert case["max_latency_ms"] >= 1 and case["max_tokens"] == 240  # 120 tokens x 2
    meta = case["metadata"]
    assert meta["source_traces"] == [trace_id(request)] and meta["review"] == "pending"
    assert (meta["service.name"], meta["service.version"], meta["models"]) == (
        "shop",
        "2.1",
        ["gpt-4o"],
    )


def test_personal_data_is_redacted_in_inputs_and_expectations(tmp_path):
    traces = tmp_path / "t.jsonl"
    question = (
        "I'm jane.roe@example.com, phone +1 (555) 010-4477, card 4111 1111 1111 1111, "
        "customer ACME-99812: refund order ORD-7781"
    )
    write_jsonl(
        traces,
        [
            turn(
                question,
                "Refunded ORD-7781 to jane.roe@example.com.",
                [
                    (
                        "refund",
                        {"email": "jane.roe@example.com", "order_id": "ORD-7781"},
                        '{"order_id": "ORD-7781", "email": "jane.roe@example.com"}',
                        None,
                    )
                ],
            )
        ],
    )
    out = tmp_path / "d.yaml"
    code, output = build(str(traces), "--out", str(out), "--all-args", "--redact", r"ACME-\d+")
    assert code == 0, output
    text = out.read_text()
    # the phone by its own digits: a random trace id in the metadata may contain "555"
    assert "jane.roe" not in text and "4111 1111" not in text and "010-4477" not in text
    assert "ACME-99812" not in text
    (case,) = cases(out)
    # the card goes when the trace file is read (otlp.redaction), before build sees it
    assert "[REDACTED:email:1]" in case["input"] and "card [REDACTED]" in case["input"]
    assert "[REDACTED:phone:1]" in case["input"] and "customer [REDACTED:value:1]" in case["input"]
    assert case["expected_tool_calls"][0]["arguments"] == {
        "email": {"any": True},
        "order_id": "ORD-7781",
    }
    load_dataset(out)


def test_near_duplicate_inputs_collapse_and_append_adds_only_new_cases(tmp_path):
    first = [
        turn(
            "Where is my order ORD-1?", "Shipped.", [("lookup_order", {"id": 1}, "shipped", None)]
        ),
        turn("where is my order  ORD-1 ??", "Shipped!", [("lookup_order", {"id": 1}, "x", None)]),
        turn("Cancel my subscription please", "Cancelled.", [("cancel", {}, "ok", None)]),
    ]
    traces = tmp_path / "a.jsonl"
    write_jsonl(traces, first)
    out = tmp_path / "d.yaml"
    code, output = build(str(traces), "--out", str(out))
    assert code == 0 and "1 near-duplicate(s) collapsed" in output, output
    built = cases(out)
    assert len(built) == 2
    assert built[0]["metadata"]["duplicates"] == [trace_id(first[1])]
    more = tmp_path / "b.jsonl"
    write_jsonl(more, [*first, turn("Do you ship to Norway?", "Yes, we do.")])
    code, output = build(str(more), "--out", str(out), "--append")
    assert code == 0 and "1 case(s) added" in output, output
    # issue 35, defect 8: the cases the dataset has are not called near-duplicates
    assert "0 near-duplicate(s) collapsed, 3 already in the dataset" in output, output
    assert [c["input"] for c in cases(out)][-1] == "Do you ship to Norway?"
    assert len(load_dataset(out).cases) == 3
    code, output = build(str(more), "--out", str(out), "--append")
    assert "0 case(s) added" in output and len(load_dataset(out).cases) == 3


def test_an_existing_dataset_is_never_overwritten_silently(tmp_path):
    """Issue 27, defect 3: ``--out existing.yaml`` replaced a reviewed dataset (exit 0)."""
    traces = tmp_path / "t.jsonl"
    write_jsonl(traces, [turn("Where is my order ORD-1?", "Shipped.")])
    out = tmp_path / "reviewed.yaml"
    reviewed = "# reviewed by hand\ncases:\n- {id: kept, input: hello}\n"
    out.write_text(reviewed)
    code, output = build(str(traces), "--out", str(out))
    assert code == 2 and f"--out {out} exists" in output and "--append" in output
    assert "--force" in output and out.read_text() == reviewed
    code, output = build(str(traces), "--out", str(out), "--append", "--force")
    assert code == 2 and out.read_text() == reviewed
    code, output = build(str(traces), "--out", str(out), "--force")
    assert code == 0 and [c["input"] for c in cases(out)] == ["Where is my order ORD-1?"]


def test_where_trace_id_and_sample_select_conversations(tmp_path):
    requests = [
        turn(
            f"Question number {i} about shoes size {40 + i}",
            f"Answer {i}",
            resource={"user.feedback": "positive" if i % 2 else "negative"},
        )
        for i in range(12)
    ]
    traces = tmp_path / "t.jsonl"
    write_jsonl(traces, requests)
    out = tmp_path / "w.yaml"
    build(
        str(traces), "--out", str(out), "--where", "user.feedback=positive", "--similarity", "100"
    )
    assert len(cases(out)) == 6
    build(str(traces), "--out", str(out), "--force", "--trace-id", trace_id(requests[3]))
    assert [c["metadata"]["source_traces"] for c in cases(out)] == [[trace_id(requests[3])]]
    build(str(traces), "--out", str(out), "--force", "--sample", "4", "--similarity", "100")
    picked = [c["metadata"]["source_traces"][0] for c in cases(out)]
    build(str(traces), "--out", str(out), "--force", "--sample", "4", "--similarity", "100")
    assert len(picked) == 4 and [c["metadata"]["source_traces"][0] for c in cases(out)] == picked
    code, output = build(str(traces), "--out", str(out), "--where", "nokey")
    assert code == 2 and "KEY=VALUE" in output


def test_a_conversation_across_traces_is_one_case_from_the_store(tmp_path):
    db = str(tmp_path / "s.db")
    conversation = {"gen_ai.conversation.id": "conv-42"}
    with Store(db) as store:
        store.write(
            [
                turn("I want to return my lamp", "Which order?", root=conversation),
                turn(
                    "Order ORD-55",
                    "Return opened for ORD-55.",
                    [("open_return", {"order_id": "ORD-55"}, '{"return": "ORD-55"}', None)],
                    root=conversation,
                ),
            ]
        )
    out = tmp_path / "c.yaml"
    code, output = build("--db", db, "--out", str(out), "--exact-args", "open_return")
    assert code == 0, output
    (case,) = cases(out)
    assert case["turns"] == ["I want to return my lamp", "Order ORD-55"]
    assert case["expected_tool_calls"][0]["arguments"] == {"order_id": "ORD-55"}
    assert case["metadata"]["conversation_id"] == "conv-42"
    assert len(case["metadata"]["source_traces"]) == 2


def test_the_judges_stored_verdict_is_recorded(tmp_path):
    from tracegrade.store.runs import save_run

    db = str(tmp_path / "j.db")
    request = turn("Is the blue kettle in stock?", "Yes, 12 left.")
    with Store(db) as store:
        store.write([request])
        case = {
            "case_id": None,
            "trace_id": trace_id(request),
            "passed": True,
            "score": 0.9,
            "details": {"judge": {"value": 0.9, "reason": "answers the question"}},
        }
        save_run(
            store,
            {
                "run": {"run_id": "r1", "dataset": None, "passed": True},
                "summary": {"score": 0.9},
                "cases": [case],
            },
        )
    out = tmp_path / "j.yaml"
    build("--db", db, "--out", str(out))
    (built,) = cases(out)
    assert built["metadata"]["judge_verdict"] == {
        "score": 0.9,
        "reason": "answers the question",
        "run_id": "r1",
    }


def test_a_built_case_fails_an_answer_that_changes_a_grounded_value(tmp_path):
    tools = [("lookup_order", {"order_id": "ORD-7781"}, ORDER, None)]
    good = turn("Where is ORD-7781?", "ORD-7781 shipped; total $149.99.", tools)
    traces = tmp_path / "good.jsonl"
    write_jsonl(traces, [good])
    out = tmp_path / "d.yaml"
    build(str(traces), "--out", str(out))
    changed = tmp_path / "changed.jsonl"
    write_jsonl(changed, [turn("Where is ORD-7781?", "Your order shipped; total $134.99.", tools)])
    for path, passes in ((traces, True), (changed, False)):
        report = tmp_path / f"{path.stem}.json"
        result = CliRunner().invoke(
            cli, ["score", str(path), "--dataset", str(out), "--json", str(report), "--no-save"]
        )
        doc = json.loads(report.read_text())
        assert doc["cases"][0]["passed"] is passes, (result.output, doc["cases"][0]["reasons"])


def test_a_single_digit_count_a_tool_result_holds_is_expected(tmp_path):
    traces = tmp_path / "t.jsonl"
    policy = '{"membership": "silver", "free_bags_per_passenger": 2, "passengers": 2}'
    write_jsonl(
        traces,
        [
            turn(
                "How many free bags?",
                "You can take 2 free checked bags each, 8 in total.",
                [("get_policy", {"user": "u1"}, policy, None)],
            )
        ],
    )
    out = tmp_path / "d.yaml"
    build(str(traces), "--out", str(out))
    (case,) = cases(out)
    assert case["must_contain"] == ["2"]  # 8 is in no tool result: not expected


def test_a_redacted_case_still_matches_its_trace_and_each_value_keeps_its_placeholder(
    tmp_path,
):
    """Issue 27, defect 2: a case whose input held an e-mail address matched no trace (its
    input said ``[REDACTED:email]``, the trace the address). Placeholders are numbered per
    value (the same address the same placeholder, in every turn) and match any text."""
    conversation = {"gen_ai.conversation.id": "conv-7"}
    first = "Hi, I am bo@example.net and bo2@example.net"
    traces = tmp_path / "t.jsonl"
    write_jsonl(
        traces,
        [
            turn(
                "I'm ann@example.org, where is order ORD-1?",
                "ORD-1 was shipped.",
                [("track", {"order_id": "ORD-1"}, '{"order_id": "ORD-1"}', None)],
            ),
            turn(first, "Which order?", root=conversation),
            turn(
                "Still bo@example.net: order ORD-2",
                "ORD-2 was shipped.",
                [("track", {"order_id": "ORD-2"}, '{"order_id": "ORD-2"}', None)],
                root=conversation,
                history=[("user", first), ("assistant", "Which order?")],
            ),
        ],
    )
    out = tmp_path / "d.yaml"
    code, output = build(str(traces), "--out", str(out))
    assert code == 0, output
    single, multi = sorted(cases(out), key=lambda c: "turns" in c)
    assert single["input"] == "I'm [REDACTED:email:1], where is order ORD-1?"
    assert multi["turns"] == [
        "Hi, I am [REDACTED:email:1] and [REDACTED:email:2]",
        "Still [REDACTED:email:1]: order ORD-2",
    ]
    scored = CliRunner().invoke(
        cli, ["score", str(traces), "--dataset", str(out), "--json", str(tmp_path / "r.json")]
    )
    assert scored.exit_code == 0, scored.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["summary"]["unmatched_cases"] == 0
    assert all(c["trace_id"] and c["passed"] for c in document["cases"])
