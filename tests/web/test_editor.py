"""The case editor: edits land in the dataset file with its comments and order kept, are
validated by ``load_dataset`` (its messages, next to the field), and stored datasets work the
same way without a file."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.support.web_forms import csrf_token, form_fields
from tests.web.shop import ShopStore
from tracegrade.dataset import load_dataset
from tracegrade.dataset.editing import Document, apply_form, form_values, validate
from tracegrade.errors import DatasetError
from tracegrade.web import UiConfig, create_app


def test_editing_a_case_changes_the_file_keeps_comments_and_still_loads(
    client: TestClient, golden: Path
) -> None:
    before = golden.read_text()
    form = form_fields(client, "/datasets/file:golden/cases/0")
    assert form["id"] == "headphones-under-300" and form["expected_tool"][0] == "search_products"
    form.update(input="Find me wireless headphones under $250", max_latency_ms="4000")
    response = client.post("/datasets/file:golden/cases/0", data=form, follow_redirects=False)
    assert response.status_code == 303, response.text
    after = golden.read_text()
    assert "input: Find me wireless headphones under $250" in after
    assert "max_latency_ms: 4000" in after
    comments = [line for line in before.splitlines() if line.strip().startswith("#")]
    assert comments == [line for line in after.splitlines() if line.strip().startswith("#")]
    lines = zip(before.splitlines(), after.splitlines(), strict=True)
    changed = [pair for pair in lines if pair[0] != pair[1]]
    assert len(changed) == 2
    case = load_dataset(golden).cases[0]
    assert case.input == "Find me wireless headphones under $250" and case.max_latency_ms == 4000


def test_an_invalid_case_shows_load_datasets_message_next_to_the_field(
    client: TestClient, golden: Path
) -> None:
    before = golden.read_text()
    form = form_fields(client, "/datasets/file:golden/cases/1")
    form["max_latency_ms"] = "fast"
    response = client.post("/datasets/file:golden/cases/1", data=form)
    assert response.status_code == 400
    error = re.search(r'<p class="field-error" id="error-max_latency_ms">(.*?)</p>', response.text)
    assert error, response.text
    document = Document.parse(before, ".yaml")
    document.case(1)["max_latency_ms"] = "fast"
    broken = golden.with_name("broken.yaml")
    broken.write_text(document.dump())
    with pytest.raises(DatasetError) as raised:
        load_dataset(broken)
    assert html.unescape(error.group(1)) == str(raised.value).replace(str(broken), str(golden))
    assert golden.read_text() == before


def test_a_bad_predicate_is_reported_on_the_tool_calls_field(client, golden: Path) -> None:
    form = form_fields(client, "/datasets/file:golden/cases/0")
    assert form["call-0-name"] == "search_products" and form["call-0-arg-0-op"] == "regex"
    form["call-0-arg-0-value"] = "("
    response = client.post("/datasets/file:golden/cases/0", data=form)
    assert response.status_code == 400
    assert 'id="error-expected_tool_calls"' in response.text and "regex" in response.text


def test_one_save_shows_every_fields_error(client: TestClient, golden: Path) -> None:
    """Issue 27, defect 12: the editor showed one field's error per save. Tool calls that are
    not YAML, an input left empty, a latency that is no number, a judge threshold above 1 and
    an id another case has: all five in one answer, each next to its field; nothing written."""
    before = golden.read_text()
    taken = load_dataset(golden).cases[0].id
    form = form_fields(client, "/datasets/file:golden/cases/1")
    form.pop("tool_calls_as", None)  # the tool calls typed as YAML, not picked as rows
    form.update(
        expected_tool_calls="- name: [search_products\n",
        input="",
        max_latency_ms="fast",
        judge_rubric="Polite",
        judge_threshold="3",
        id=str(taken),
    )
    response = client.post("/datasets/file:golden/cases/1", data=form)
    assert response.status_code == 400
    shown = dict(
        re.findall(r'<p class="field-error" id="error-([a-z_]+)">(.*?)</p>', response.text)
    )
    assert set(shown) >= {"expected_tool_calls", "input", "max_latency_ms", "judge_threshold", "id"}
    assert "not valid YAML" in shown["expected_tool_calls"]
    assert "&#39;input&#39; or &#39;turns&#39;" in shown["input"]
    assert "duplicate id" in shown["id"]
    assert golden.read_text() == before


def test_new_duplicate_and_delete(client: TestClient, golden: Path) -> None:
    count = len(load_dataset(golden).cases)
    form = form_fields(client, "/datasets/file:golden/cases/new")
    form.update(id="new-case", input="Do you sell <b>socks</b>?", expected_tool=["search_products"])
    form.update(tags="products, new", tier="smoke", judge_rubric="helpful", judge_threshold="0.8")
    assert client.post("/datasets/file:golden/cases/new", data=form).status_code == 200
    cases = load_dataset(golden).cases
    assert len(cases) == count + 1 and cases[-1].id == "new-case"
    assert cases[-1].tags == ["products", "new"] and cases[-1].judge.threshold == 0.8
    page = client.get("/datasets/file:golden").text
    version = re.search(r'name="version" value="([0-9a-f]+)"', page).group(1)
    token = csrf_token(page)
    client.post(
        f"/datasets/file:golden/cases/{count}/duplicate",
        data={"csrf_token": token, "version": version},
    )
    assert [c.id for c in load_dataset(golden).cases][-2:] == ["new-case", "new-case-copy"]
    version = re.search(
        r'name="version" value="([0-9a-f]+)"', client.get("/datasets/file:golden").text
    ).group(1)
    client.post(
        f"/datasets/file:golden/cases/{count}/delete",
        data={"csrf_token": token, "version": version},
    )
    assert [c.id for c in load_dataset(golden).cases][-1] == "new-case-copy"


def test_a_stale_form_is_refused(client: TestClient, golden: Path) -> None:
    form = form_fields(client, "/datasets/file:golden/cases/0")
    golden.write_text(golden.read_text() + "\n# edited elsewhere\n")
    response = client.post("/datasets/file:golden/cases/0", data=form)
    assert response.status_code == 400 and "changed since this form was opened" in response.text


def test_new_case_from_a_trace_is_prefilled(client: TestClient, shop: ShopStore) -> None:
    trace_id = client.get(f"/runs/{shop.good_run}.json").json()["cases"][0]["trace_id"]
    redirect = client.get(
        "/datasets/new-case", params={"dataset": "file:golden", "trace_id": trace_id}
    )
    assert redirect.status_code == 200
    form = form_fields(client, f"/datasets/file:golden/cases/new?trace_id={trace_id}")
    assert form["input"] and form["expected_tool"][0]


def test_stored_datasets_are_created_and_edited_in_the_database(tmp_path: Path) -> None:
    app = create_app(UiConfig(db=str(tmp_path / "s.db")))
    with TestClient(app, base_url="http://localhost") as client:
        page = client.get("/datasets").text
        created = client.post("/datasets", data={"csrf_token": csrf_token(page), "name": "team"})
        assert created.status_code == 200 and "Dataset team (stored)" in created.text
        form = form_fields(client, "/datasets/store:team/cases/new")
        form.update(id="c1", input="hello")
        client.post("/datasets/store:team/cases/new", data=form)
        cases = client.get("/datasets/store:team.json").json()["cases"]
        assert [(c["id"], c["input"]) for c in cases] == [("c1", "hello")]
        bad = client.post("/datasets", data={"csrf_token": csrf_token(page), "name": "../x"})
        assert bad.status_code == 400
    app.state.ui.close()


def test_round_trip_keeps_every_byte_of_an_unchanged_dataset(golden: Path) -> None:
    text = golden.read_text()
    assert Document.parse(text, ".yaml").dump() == text


def test_form_values_show_a_case_as_written(golden: Path) -> None:
    document = Document.parse(golden.read_text(), ".yaml")
    values = form_values(document.case(0))
    assert values["must_contain"] == "$279.99" and values["tier"] == "smoke"
    assert "search_products" in values["expected_tool_calls"]


def test_validate_names_the_dataset_not_a_temporary_file(golden: Path) -> None:
    with pytest.raises(DatasetError) as raised:
        validate("cases: [{input: 1, tier: huge}]\n", ".yaml", str(golden))
    assert str(raised.value).startswith(f"{golden}:1: case 1: field ")
    assert raised.value.field in ("input", "tier")


REPO = Path(__file__).resolve().parents[2]
DATASETS = sorted(
    p.relative_to(REPO)
    for folder in ("datasets/ecommerce", "datasets/e-commerce-agents", "datasets/rag")
    for p in (REPO / folder).iterdir()
    if p.suffix in (".yaml", ".json")
) + sorted(p.relative_to(REPO) for p in (REPO / "tests/data/design-shapes").iterdir())
"""Every dataset of datasets/ (the other files there are traces) and every design-document
case shape: multi-turn cases with turn objects, revival, prompt/judge_prompt, EvalCase."""


@pytest.mark.parametrize("path", DATASETS, ids=str)
def test_saving_every_case_unchanged_leaves_the_file_byte_for_byte(path: Path) -> None:
    text = (REPO / path).read_text()
    document = Document.parse(text, path.suffix)
    for index in range(len(document.cases)):
        apply_form(document.case(index), form_values(document.case(index)))
    assert not document.changed  # the data itself, not only the text given back
    assert document.dump() == text


def test_turn_objects_and_revival_are_shown_readably(golden: Path) -> None:
    document = Document.parse(
        (REPO / "tests/data/design-shapes/agent_revival.yaml").read_text(), ".yaml"
    )
    values = form_values(document.case(0))
    assert values["turns_as"] == "yaml" and values["revive"] == "true"
    assert values["turns"].startswith(
        "- prompt: I want to return the laptop from order 550e8400-e29b-41d4-a716-446655440004\n"
        "  judge_prompt: Checks whether the order is eligible"
    )
    plain = form_values(document.case(1))
    assert plain["turns_as"] == "yaml" and "- What is in the first one?\n" in plain["turns"]
    evalcase = Document.parse(
        (REPO / "tests/data/design-shapes/regression_alerts.json").read_text(), ".json"
    )
    values = form_values(evalcase.case(0))
    assert values["input_as"] == "yaml" and "content: Show me my recent orders" in values["input"]
    assert values["other_keys"] == "name, expectedOutput, weight"


def test_a_changed_list_keeps_its_flow_style(golden: Path) -> None:
    document = Document.parse(golden.read_text(), ".yaml")
    values = form_values(document.case(2))
    apply_form(document.case(2), {**values, "tags": values["tags"] + ", extra"})
    assert "    tags: [products, compare, extra]\n" in document.dump()


def test_a_json_dataset_in_the_seed_shape_is_edited_and_stays_json(tmp_path: Path) -> None:
    source = (
        Path(__file__).resolve().parents[2] / "datasets/e-commerce-agents/product_discovery.json"
    )
    path = tmp_path / "product_discovery.json"
    path.write_text(source.read_text())
    document = Document.parse(path.read_text(), ".json")
    values = form_values(document.case(0))
    apply_form(document.case(0), {**values, "input": "Find me wired headphones"})
    text = document.dump()
    validate(text, ".json", str(path))
    path.write_text(text)
    assert json.loads(text)[0]["input"] == "Find me wired headphones"
    assert (
        load_dataset(path).cases[0].expected_tools
        == json.loads(source.read_text())[0]["expected_tools"]
    )


def test_a_save_keeps_the_dataset_files_permissions(client: TestClient, golden: Path) -> None:
    golden.chmod(0o644)
    form = form_fields(client, "/datasets/file:golden/cases/0")
    form.update(input="Find me wireless headphones under $250")
    response = client.post("/datasets/file:golden/cases/0", data=form, follow_redirects=False)
    assert response.status_code == 303, response.text
    assert golden.stat().st_mode & 0o777 == 0o644


def _post_form(client: TestClient, url: str, action: str, **changes: str):  # type: ignore[no-untyped-def]
    form = form_fields(client, url)
    form.update(changes)
    return client.post(action, data=form, follow_redirects=False)


def test_deleting_a_case_without_an_id_renames_no_other_case(tmp_path: Path) -> None:
    """Issue 27, defect 6: ids are positional when a case has none (``NAME:N``); deleting
    case 1 renamed case 3 to ``shop:2``, so compare and history paired different cases."""
    path = tmp_path / "shop.yaml"
    path.write_text(
        "name: shop\ncases:\n  - input: first\n  - input: second  # kept\n  - input: third\n"
    )
    before = [c.id for c in load_dataset(path).cases]
    app = create_app(UiConfig(db=str(tmp_path / "s.db"), datasets=(path,)))
    with TestClient(app, base_url="http://localhost") as client:
        page = client.get("/datasets/file:shop").text
        version = re.search(r'name="version" value="([0-9a-f]+)"', page)
        assert version
        data = {"csrf_token": csrf_token(page), "version": version.group(1)}
        deleted = client.post("/datasets/file:shop/cases/0/delete", data=data)
        assert deleted.status_code == 200, deleted.text
    app.state.ui.close()
    after = {c.input: c.id for c in load_dataset(path).cases}
    assert before == ["shop:1", "shop:2", "shop:3"]
    assert after == {"second": "shop:2", "third": "shop:3"}
    assert "  - id: shop:2\n    input: second  # kept\n" in path.read_text()


def test_a_new_case_without_an_id_gets_a_stable_one_from_its_input(
    client: TestClient, golden: Path
) -> None:
    url = "/datasets/file:golden/cases/new"
    first = _post_form(client, url, url, input="Find me a Cheap USB-C charger, please!")
    second = _post_form(client, url, url, input="Find me a cheap USB-C charger, please")
    assert first.status_code == second.status_code == 303
    ids = [c.id for c in load_dataset(golden).cases[-2:]]
    assert ids == ["find-me-a-cheap-usb-c-charger-please", "find-me-a-cheap-usb-c-charger-please-2"]


def test_clearing_the_id_of_an_existing_case_keeps_its_id(client: TestClient, golden: Path) -> None:
    url = "/datasets/file:golden/cases/0"
    response = _post_form(client, url, url, id="", input="Wireless headphones under $250")
    assert response.status_code == 303
    case = load_dataset(golden).cases[0]
    assert case.id == "headphones-under-300" and case.input == "Wireless headphones under $250"


def test_tool_fields_are_picked_from_the_tools_seen_in_traces(client: TestClient) -> None:
    page = client.get("/datasets/file:golden/cases/0").text
    seen = re.search(r'<datalist id="tools-seen">(.*?)</datalist>', page, re.S)
    assert seen and '<option value="search_products">' in seen.group(1)
    assert '<option value="get_order">' in seen.group(1)  # the support conversation's tool
    keys = re.search(r'<datalist id="keys-search_products">(.*?)</datalist>', page, re.S)
    assert keys and '<option value="query">' in keys.group(1)
    assert 'name="tool_calls_as" value="rows"' in page
    assert 'name="call-0-arg-1-key" class="arg-key" list="keys-search_products"' in page
    assert '<option value="&lt;=" selected>' in page  # the operator as written, kept


def test_a_new_case_with_tool_calls_picked_as_rows(client: TestClient, golden: Path) -> None:
    url = "/datasets/file:golden/cases/new"
    form = form_fields(client, url)
    form.update(
        {
            "id": "order-1243",
            "input": "Where is order 1243?",
            "expected_tool": ["get_order", ""],
            "call-0-name": "get_order",
            "call-0-required": "on",
            "call-0-arg-0-key": "order_id",
            "call-0-arg-0-op": "is",
            "call-0-arg-0-value": '"1243"',
            "call-0-arg-1-key": "verbose",
            "call-0-arg-1-op": "any",
        }
    )
    response = client.post(url, data=form, follow_redirects=False)
    assert response.status_code == 303, response.text
    case = load_dataset(golden).cases[-1]
    assert case.expected_tools == ["get_order"]
    (call,) = case.expected_tool_calls
    assert call.name == "get_order" and call.required
    assert call.arguments == {"order_id": "1243", "verbose": {"any": True}}


def test_calls_the_rows_cannot_show_stay_yaml(client: TestClient, golden: Path) -> None:
    index = next(
        i
        for i, c in enumerate(load_dataset(golden).cases)
        if any(
            isinstance(spec, dict) and len(spec) > 1  # e.g. {optional: true, "<=": 10}
            for call in c.expected_tool_calls
            for spec in call.arguments.values()
        )
    )
    page = client.get(f"/datasets/file:golden/cases/{index}").text
    assert 'name="tool_calls_as"' not in page
    textarea = re.search(r'<textarea name="expected_tool_calls"[^>]*>(.*?)</textarea>', page, re.S)
    assert textarea and "ignore_case: true" in textarea.group(1)


def test_saving_every_case_unchanged_through_the_form_leaves_the_file_as_it_was(
    client: TestClient, golden: Path
) -> None:
    before = golden.read_text()
    for index in range(10):  # every predicate shape of the golden file: regex, <=, subset, ...
        url = f"/datasets/file:golden/cases/{index}"
        response = client.post(url, data=form_fields(client, url), follow_redirects=False)
        assert response.status_code == 303, (index, response.text[-2000:])
    assert golden.read_text() == before


@pytest.fixture
def shapes(tmp_path: Path, shop: ShopStore) -> Iterator[tuple[TestClient, list[Path]]]:
    """The app over copies of the multi-turn, revival and other-shape datasets."""
    paths = []
    for name in DATASETS:
        if name.name in ("revival.yaml", "case_editor.yaml", "agent_revival.yaml") or (
            name.name == "regression_alerts.json"
        ):
            paths.append(tmp_path / name.name)
            paths[-1].write_text((REPO / name).read_text())
    app = create_app(UiConfig(db=str(shop.db), datasets=tuple(paths)))
    with TestClient(app, base_url="http://localhost") as test_client:
        yield test_client, paths
    app.state.ui.close()


def test_multi_turn_revival_and_other_shapes_saved_unchanged_through_the_form(shapes) -> None:
    client, paths = shapes
    for path in paths:
        before = path.read_text()
        for index in range(len(load_dataset(path).cases)):
            url = f"/datasets/file:{path.stem}/cases/{index}"
            response = client.post(url, data=form_fields(client, url), follow_redirects=False)
            assert response.status_code == 303, (path.name, index, response.text[-2000:])
        assert path.read_text() == before, path.name


def test_a_turns_judge_prompt_and_the_revived_turns_are_edited(shapes) -> None:
    client, paths = shapes
    path = next(p for p in paths if p.name == "revival.yaml")
    url = "/datasets/file:revival/cases/0"
    form = form_fields(client, url)
    assert form["turns_as"] == "yaml" and form["revive"] == "true"
    form["turns"] = form["turns"].replace("from the search.", "from the search, cheapest first.")
    form["revive"] = "2"
    response = client.post(url, data=form, follow_redirects=False)
    assert response.status_code == 303, response.text[-2000:]
    text = path.read_text()
    assert (
        "judge_prompt: Lists running shoes under $150 with their prices, from the search, "
        "cheapest first.\n" in text
    )
    assert "test_agent_revival: true" not in text and "    revive:\n      - 2\n" in text
    assert text.startswith("# Agent revival for the example shop assistant")
    (case,) = load_dataset(path).cases
    assert case.revived_turns == (2,) and case.turns == [
        "Show me running shoes under $150",
        "Is the first one in stock?",
    ]
    assert case.judge is not None and "cheapest first" in case.judge.rubric


def test_a_bad_turn_in_yaml_is_reported_on_the_turns_field(shapes) -> None:
    client, paths = shapes
    url = "/datasets/file:agent_revival/cases/0"
    form = form_fields(client, url)
    form["turns"] = "- prompt: [unclosed"
    response = client.post(url, data=form)
    assert response.status_code == 400
    assert 'id="error-turns"' in response.text and "not valid YAML" in response.text


# --- simulated users -----------------------------------------------------------------------------


def test_new_case_from_a_trace_as_a_simulated_user_is_prefilled_to_review(
    client: TestClient, shop: ShopStore
) -> None:
    trace_id = client.get(f"/runs/{shop.good_run}.json").json()["cases"][0]["trace_id"]
    page = client.get(f"/traces/{trace_id}").text
    assert 'id="new-case-simulated"' in page
    redirect = client.get(
        "/datasets/new-case",
        params={"dataset": "file:golden", "trace_id": trace_id, "simulated": "1"},
        follow_redirects=False,
    )
    assert redirect.headers["location"].endswith("&simulated=1")
    form = form_fields(client, redirect.headers["location"])
    import yaml

    user = yaml.safe_load(form["user"])
    assert user["goal"].startswith("[review: restate the user's goal] " + form["input"])
    assert user["max_turns"] >= 3 and not form["turns"]


SIMULATED_USER = """\
goal: Get a refund for the laptop.
facts: {order_number: 550e8400-e29b-41d4-a716-446655440004}
max_turns: 3
replies: {"order (number|id)": "It's order {order_number}."}
stop_when: refund is confirmed
"""


def test_a_simulated_user_is_written_by_the_editor_and_its_errors_shown(
    client: TestClient, golden: Path
) -> None:
    form = form_fields(client, "/datasets/file:golden/cases/new")
    form.update(id="refund-simulated", input="I want a refund.", user=SIMULATED_USER)
    assert client.post("/datasets/file:golden/cases/new", data=form).status_code == 200
    case = load_dataset(golden).cases[-1]
    assert case.id == "refund-simulated" and case.user is not None
    assert case.user.reply_to("What is your order number?") == (
        "It's order 550e8400-e29b-41d4-a716-446655440004."
    )
    count = len(load_dataset(golden).cases)
    shown = form_fields(client, f"/datasets/file:golden/cases/{count - 1}")
    assert "stop_when: refund is confirmed" in shown["user"]
    before = golden.read_text()
    shown["user"] = SIMULATED_USER.replace("stop_when: refund is confirmed\n", "")
    response = client.post(f"/datasets/file:golden/cases/{count - 1}", data=shown)
    assert response.status_code == 400
    error = re.search(r'<p class="field-error" id="error-user">(.*?)</p>', response.text)
    assert error and "needs stop_when" in error.group(1)
    assert golden.read_text() == before


# --- trajectory modes ----------------------------------------------------------------------------


def test_trajectory_modes_are_chosen_in_the_form_and_written_to_the_case(
    client: TestClient, golden: Path
) -> None:
    form = form_fields(client, "/datasets/file:golden/cases/new")
    assert form["tool_calls_match"] == "" and form["tool_calls_scope"] == ""
    form.update(
        id="refund-exactly",
        input="Refund order 550e8400-e29b-41d4-a716-446655440004",
        expected_tool_calls=(
            "- name: initiate_return\n"
            "  arguments: {order_id: 550e8400-e29b-41d4-a716-446655440004, reason: defect}\n"
        ),
        tool_calls_match="subset",
        arguments_match="order_id, reason",
        tool_calls_scope="top_level",
    )
    assert client.post("/datasets/file:golden/cases/new", data=form).status_code == 200
    case = load_dataset(golden).cases[-1]
    assert case.id == "refund-exactly" and case.trajectory_match == "subset"
    assert case.arguments_match == ["order_id", "reason"]
    assert case.tool_calls_scope == "top_level"
    index = len(load_dataset(golden).cases) - 1
    shown = form_fields(client, f"/datasets/file:golden/cases/{index}")
    assert (shown["tool_calls_match"], shown["tool_calls_scope"]) == ("subset", "top_level")
    assert shown["arguments_match"] == "order_id, reason"
    before = golden.read_text()
    url = f"/datasets/file:golden/cases/{index}"
    assert client.post(url, data=shown, follow_redirects=False).status_code == 303
    assert golden.read_text() == before  # saved unchanged: the file unchanged
    shown = form_fields(client, url)
    shown.update(arguments_match="ignore", tool_calls_match="", tool_calls_scope="")
    assert client.post(url, data=shown, follow_redirects=False).status_code == 303
    case = load_dataset(golden).cases[index]
    assert case.arguments_match == "ignore" and case.trajectory_match == "superset"
    assert "tool_calls_scope" not in golden.read_text()


def test_a_bad_match_mode_is_shown_next_to_its_field(client: TestClient, golden: Path) -> None:
    form = form_fields(client, "/datasets/file:golden/cases/0")
    before = golden.read_text()
    form["tool_calls_match"] = "sometimes"  # not one of the select's options
    response = client.post("/datasets/file:golden/cases/0", data=form)
    assert response.status_code == 400
    error = re.search(
        r'<p class="field-error" id="error-tool_calls_match">(.*?)</p>', response.text
    )
    assert error and "&#39;exact&#39;, &#39;in_order&#39;" in error.group(1)
    assert golden.read_text() == before
