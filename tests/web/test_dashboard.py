"""Issue 27's dashboard, in process over the shared store (:mod:`tests.web.shop`): trace search,
the chat view of a conversation (Markdown rendered safely), failed tool calls marked in the
waterfall, two runs' answers side by side, and the defects found on the way (a case whose trace
is not stored, compare's numbers, each hard failure once, the reason of a failed 1.000)."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from pathlib import Path

from starlette.testclient import TestClient

from tests.web.shop import SUPPORT_ANSWER, XSS_ANSWER
from tracegrade.store.runs import save_run
from tracegrade.store.traces import Store
from tracegrade.web import UiConfig, create_app

DOC = json.loads((Path(__file__).parent / "run_document.json").read_text())


def _inputs(client: TestClient, **params: str) -> list[str]:
    response = client.get("/traces.json", params=params)
    assert response.status_code == 200, response.text
    return [t["user_input"] for t in response.json()["traces"]]


def test_traces_are_searched_by_service_tool_text_verdict_and_time(client, shop) -> None:
    assert _inputs(client, service="support-agent") == [
        "Sorry, it is 1243",
        "Where is my order 1234?",
    ]
    assert _inputs(client, tool="get_order", q="1243") == ["Sorry, it is 1243"]
    assert _inputs(client, q="ORDER 1243 HAS") == ["Sorry, it is 1243"]  # the answer, any case
    failed = client.get("/traces.json", params={"verdict": "fail"}).json()["traces"]
    assert {t["case_id"] for t in failed} >= {"headphones-under-300", "recent-orders"}
    assert all(any(not v["passed"] for v in t["verdicts"]) for t in failed)
    everything = client.get("/traces.json").json()["traces"]
    micros = everything[0]["start_unix_nano"] // 1000  # floored: the filter is inclusive
    newest = dt.datetime.fromtimestamp(micros // 10**6, dt.UTC).replace(microsecond=micros % 10**6)
    since = newest.strftime("%Y-%m-%dT%H:%M:%S.%f")
    until = (newest - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    assert _inputs(client, since=since) == [everything[0]["user_input"]]
    assert _inputs(client, until=until) == []
    html = client.get("/traces", params={"service": "support-agent"}).text
    assert 'option value="support-agent" selected' in html and "2 failed" in html


def test_a_bad_filter_is_a_400_that_says_how_to_write_it(client) -> None:
    bad_time = client.get("/traces.json", params={"since": "yesterday"})
    assert bad_time.status_code == 400 and "YYYY-MM-DDTHH:MM" in bad_time.json()["error"]
    bad_verdict = client.get("/traces.json", params={"verdict": "maybe"})
    assert bad_verdict.status_code == 400 and "pass, fail, unscored" in bad_verdict.json()["error"]


def test_a_conversation_of_two_traces_is_one_chat_with_tool_calls_inline(client, shop) -> None:
    first, second = shop.support_traces
    chat = client.get(f"/traces/{second}.json").json()["chat"]
    assert chat["trace_ids"] == [first, second] and chat["conversation_id"] == "conv-support-1"
    messages = chat["messages"]
    assert [m["role"] for m in messages] == ["user", *["assistant"] * 3, "user", *["assistant"] * 2]
    assert messages[0]["text"] == "Where is my order 1234?"
    timeout, not_found = messages[1]["tool_calls"][0], messages[2]["tool_calls"][0]
    assert timeout["error"] == "upstream timeout after 5 s"
    assert not_found["error"] and "order 1234 not found" in not_found["result"]
    assert json.loads(not_found["arguments"]) == {"order_id": "1234"}
    assert messages[3] == {**messages[3], "text": SUPPORT_ANSWER, "final": True}
    shipped = messages[5]["tool_calls"][0]
    assert shipped["error"] is None and '"status": "shipped"' in shipped["result"]
    assert messages[6]["text"] == "Order 1243 has **shipped**." and messages[6]["final"]


def test_a_conversation_by_its_trace_ids_for_other_pages(shop) -> None:
    from tracegrade.web.pages import chat_of

    second, first = reversed(shop.support_traces)
    with Store(shop.db) as store:
        chat = chat_of(store, [second, "0" * 32, first])
    assert chat.trace_ids == (first, second) and chat.missing == ("0" * 32,)
    assert chat.failed_tool_calls == 2 and chat.messages[-1].final


def test_a_trace_page_dims_the_other_turns_of_its_conversation(client, shop) -> None:
    first, second = shop.support_traces
    html = client.get(f"/traces/{second}").text
    chat = html.split('id="chat-t"', 1)[1].split("</section>", 1)[0]
    dimmed = re.findall(r'class="msg msg-(\w+)[^"]* elsewhere" title="trace (\w+)"', chat)
    assert [role for role, _ in dimmed] == ["user", "assistant", "assistant", "assistant"]
    assert {trace for _, trace in dimmed} == {first}
    assert chat.count(" elsewhere") == 4  # the second turn's three messages are not dimmed


def test_a_later_turn_alone_shows_the_turns_it_replays_as_earlier(shop) -> None:
    """Its first turn's trace not asked for, the second trace's replayed history comes first,
    marked ``history`` (the review page and ``review show`` render it "earlier turn")."""
    from tracegrade.web.pages import chat_of

    with Store(shop.db) as store:
        chat = chat_of(store, [shop.support_traces[1]])
    history = [m for m in chat.messages if m.role == "history"]
    assert [m.text for m in history] == ["Where is my order 1234?"]
    assert chat.messages[0].role == "history"
    assert [m.text for m in chat.messages if m.role == "user"] == ["Sorry, it is 1243"]


def test_chat_markdown_is_rendered_and_links_cannot_script(client, shop) -> None:
    html = client.get(f"/traces/{shop.support_traces[0]}").text
    assert "<strong>Sorry</strong>, I could not find order <code>1234</code>" in html
    assert '<a href="https://example.com/help" rel="nofollow noopener noreferrer">' in html
    assert html.count('class="tool-call failed"') == 2


def test_script_and_html_in_trace_content_are_shown_as_text(client, shop) -> None:
    html = client.get(f"/traces/{shop.xss_trace}").text
    main = html.split("<main>", 1)[1]
    assert "<script>window" not in main and "<img" not in main and "<svg onload" not in main
    assert "&lt;script&gt;window.__xss=&#39;a2&#39;&lt;/script&gt;" in main
    outside_text = re.sub(r"<pre[^>]*>.*?</pre>", "", main, flags=re.S)
    assert 'onerror="' not in main and 'href="javascript:' not in outside_text
    assert XSS_ANSWER.split(" ", 1)[0] in main  # "Try", the text around the payloads


def test_the_waterfall_marks_each_failed_tool_call(client, shop) -> None:
    waterfall = client.get(f"/traces/{shop.support_traces[0]}.json").json()["waterfall"]
    errors = [f["error"] for f in waterfall["failures"]]
    assert errors[0] == "upstream timeout after 5 s" and "order 1234 not found" in errors[1]
    failed = [s for s in waterfall["spans"] if s["error"]]
    assert {s["name"] for s in failed} == {"execute_tool get_order"} and len(failed) == 2
    html = client.get(f"/traces/{shop.support_traces[0]}").text
    assert html.count('class="wf-row role-tool error"') == 2
    assert 'class="badge fail wf-failed">2 failed' in html


def test_a_case_whose_trace_is_not_stored_says_so(client, shop) -> None:
    """Issue 27, defect 7: ``score FILE --db`` stores the run, not the trace; the case page
    said "(no user input recorded)" and "(no final answer)"."""
    data = client.get(f"/runs/{shop.file_run}/cases/0.json").json()
    assert data["missing"] == [data["case"]["trace_id"]] and data["waterfalls"] == []
    assert data["trace_source"].endswith("from-file.json")
    html = client.get(f"/runs/{shop.file_run}/cases/0").text
    assert "This case's trace is not in this store" in html
    assert "tracegrade import FILE --db STORE" in html
    assert "(no user input recorded)" not in html and "(no final answer)" not in html
    assert "(not shown: the trace is not stored)" in html


def test_compare_shows_each_metric_in_its_unit(client, shop) -> None:
    html = client.get(f"/compare?base={shop.good_run}&current={shop.bad_run}").text
    deltas = re.search(r'<table class="grid" id="deltas">(.*?)</table>', html, re.S)
    assert deltas
    cells = (
        r'<tr><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td><td class="delta ?(\w*)">([^<]+)</td>'
    )
    rows = re.findall(cells, deltas.group(1))
    by_name = {r[0]: (r[1], r[2], r[4]) for r in rows}
    colour = {r[0]: r[3] for r in rows}
    assert by_name["pass rate"] == ("100.0%", "20.0%", "-80.0 pt")
    # issue 35, defect 7: coloured as the docs say (red worse, green better, noise plain)
    assert colour["pass rate"] == "worse" and colour["hallucination rate"] == "worse"
    assert re.fullmatch(r"\$0\.\d{6}", by_name["cost"][0])
    assert re.fullmatch(r"\d[\d,]* ms", by_name["latency p95"][0])
    assert "pass_rate" not in deltas.group(1) and "cost_usd" not in deltas.group(1)


def test_two_runs_answers_side_by_side(client, shop) -> None:
    params = {"base": shop.good_run, "current": shop.bad_run, "case": "headphones-under-300"}
    data = client.get("/compare/case.json", params=params).json()
    base, current = data["base"], data["current"]
    assert base["case"]["passed"] and not current["case"]["passed"]
    assert base["answer"] and current["answer"] and base["answer"] != current["answer"]
    # issue 35: what went most wrong (the lowest-scoring scorer's reason) leads, then the score
    hardest, below = current["verdict_reasons"]
    assert hardest.startswith("value_grounding: ")  # the invented price, not the missing phrase
    assert below.startswith("score 0.767 is below the threshold")
    assert all(c["messages"][0]["role"] == "user" for c in base["chats"] + current["chats"])
    kinds = {kind for kind, _ in data["changes"]}
    assert kinds == {"same", "removed", "added"}
    assert "".join(t for k, t in data["changes"] if k != "added") == base["answer"]
    assert "".join(t for k, t in data["changes"] if k != "removed") == current["answer"]
    html = client.get("/compare/case", params=params).text
    assert 'id="side-base"' in html and 'id="side-current"' in html
    assert "<del>$49.95;</del><ins>$44.96;</ins>" in html
    compare = client.get(f"/compare?base={shop.good_run}&current={shop.bad_run}").text
    assert "/compare/case?base=" in compare
    position = client.get(f"/runs/{shop.bad_run}.json").json()["cases"][0]["position"]
    assert 'id="side-by-side-form"' in client.get(f"/runs/{shop.bad_run}/cases/{position}").text


def _hard_failure_run(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "hard.db")
    doc = copy.deepcopy(DOC)
    hard = "budget: latency 900 ms over 500 ms"
    case = doc["cases"][0]
    case.update(passed=False, score=1.0, hard_failures=[hard], reasons=[hard, "other note"])
    doc["run"]["run_id"] = "hard-run"
    with Store(db) as store:
        save_run(store, doc)
    return db, hard


def test_the_run_page_lists_each_hard_failure_once_next_to_the_failed_verdict(
    tmp_path: Path,
) -> None:
    db, hard = _hard_failure_run(tmp_path)
    app = create_app(UiConfig(db=db, index_traces=False))
    with TestClient(app, base_url="http://localhost") as client:
        html = client.get("/runs/hard-run").text
        case = client.get("/runs/hard-run/cases/0").text
    app.state.ui.close()
    assert html.count(hard) == 1 and html.count("other note") == 1
    rows = re.findall(r'<td class="verdict">(.*?)</td>\s*<td>([^<]*)</td>', html, re.S)
    assert any(hard in verdict and score == "1.000" for verdict, score in rows)
    assert case.count(hard) == 1 and 'id="verdict-reason"' in case
