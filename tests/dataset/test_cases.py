"""Golden datasets: the design documents' seed files, formats, validation errors, case helpers."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from tracegrade.dataset import Case, load_dataset
from tracegrade.errors import DatasetError

SEEDS = Path(__file__).parents[2] / "datasets" / "e-commerce-agents"
SEED_FILES = sorted(SEEDS.glob("*.json"))


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    return str(info.value)


# --- the seed files -------------------------------------------------------------------------------


def test_the_design_documents_seed_files_are_present():
    assert {"order_management.json", "product_discovery.json"} <= {p.name for p in SEED_FILES}


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.stem)
def test_seed_file_loads_every_case_unchanged(path):
    raw = json.loads(path.read_text())
    dataset = load_dataset(path)
    assert len(dataset.cases) == len(raw) == 5
    for case, source in zip(dataset.cases, raw, strict=True):
        assert {key: getattr(case, key) for key in source} == source


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.stem)
def test_seed_cases_get_ids_from_the_file_name(path):
    assert [c.id for c in load_dataset(path).cases] == [f"{path.stem}:{i}" for i in range(1, 6)]


def test_seed_case_expects_its_tools_and_fields():
    first = load_dataset(SEEDS / "order_management.json").cases[0]
    assert first.input == "Show me my recent orders"
    assert first.all_expected_tools == ["get_user_orders"]
    assert first.expected_fields == ["order_id", "status", "total", "created_at"]
    assert first.criteria["grounded"] is True and first.tier == "full"


def test_seed_case_expecting_two_tools():
    cases = load_dataset(SEEDS / "order_management.json").cases
    assert cases[4].expected_tools == ["check_return_eligibility", "initiate_return"]


def test_dataset_records_its_source_and_digest():
    path = SEEDS / "product_discovery.json"
    dataset = load_dataset(path)
    assert dataset.name == "product_discovery" and dataset.source == str(path)
    assert dataset.digest == hashlib.sha256(path.read_bytes()).hexdigest()


# --- formats --------------------------------------------------------------------------------------


def test_yaml_list_of_cases_loads(tmp_path):
    path = write(
        tmp_path,
        "shop.yaml",
        """
        - id: a
          input: Show me my recent orders
          expected_tools: [get_user_orders]
        - input: Find headphones
          tier: smoke
    """,
    )
    dataset = load_dataset(path)
    assert [c.id for c in dataset.cases] == ["a", "shop:2"]
    assert dataset.cases[1].tier == "smoke"


def test_yaml_object_with_settings_loads(tmp_path):
    path = write(
        tmp_path,
        "shop.yml",
        """
        name: shop
        description: smoke tests
        threshold: 0.8
        weights: {groundedness: 0.5, correctness: 0.5}
        field_aliases:
          price: [fee]
        cases:
          - input: Show me my recent orders
    """,
    )
    dataset = load_dataset(path)
    assert (dataset.name, dataset.threshold, dataset.weights) == (
        "shop",
        0.8,
        {"groundedness": 0.5, "correctness": 0.5},
    )
    assert dataset.field_aliases == {"price": ["fee"]} and dataset.cases[0].id == "shop:1"


def test_json_object_with_cases_loads(tmp_path):
    path = write(
        tmp_path, "d.json", json.dumps({"threshold": 0.6, "cases": [{"id": "x", "input": "hi"}]})
    )
    dataset = load_dataset(path)
    assert dataset.name == "d" and dataset.threshold == 0.6 and dataset.cases[0].id == "x"


def test_jsonl_one_case_per_line_skipping_blank_lines(tmp_path):
    path = write(
        tmp_path, "d.jsonl", '{"id": "a", "input": "one"}\n\n{"id": "b", "input": "two"}\n'
    )
    assert [c.input for c in load_dataset(path).cases] == ["one", "two"]


def test_expected_tool_calls_with_predicates_load(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - input: Find headphones under $300
          expected_tool_calls:
            - name: search_products
              arguments:
                query: {regex: headphone}
                max_price: {"<=": 300}
              required: true
    """,
    )
    [call] = load_dataset(path).cases[0].expected_tool_calls
    assert call.required and call.predicates["max_price"].check(250)[0]
    assert not call.predicates["max_price"].check(350)[0]


# --- errors name the file, line, case and field ---------------------------------------------------


def test_unknown_key_names_file_line_case_and_field(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - id: a
          input: first
        - id: b
          input: second
          expeced_tools: [get_user_orders]
    """,
    )
    message = error_of(path)  # issue 10 item 16: the field's own line, and a suggestion
    assert message == (
        f"{path}:5: case 2 (id 'b'): field 'expeced_tools': unknown field; "
        "did you mean 'expected_tools'?"
    )


def test_unknown_key_in_json_names_the_line_of_the_case(tmp_path):
    path = write(
        tmp_path,
        "d.json",
        """
        [
          {"id": "a", "input": "first"},
          {"id": "b", "input": "second", "criterias": {}}
        ]
    """,
    )
    assert error_of(path).startswith(f"{path}:3: case 2 (id 'b'): field 'criterias':")


def test_error_in_jsonl_names_the_line_of_the_case(tmp_path):
    path = write(
        tmp_path,
        "d.jsonl",
        '{"id": "a", "input": "one"}\n\n{"id": "b", "input": "two", "tier": "nightly"}\n',
    )
    assert error_of(path).startswith(f"{path}:3: case 2 (id 'b'): field 'tier':")


def test_error_in_an_object_dataset_names_the_line_of_the_case(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        name: shop
        cases:
          - input: one
          - input: two
            weight: 0
    """,
    )
    assert error_of(path).startswith(f"{path}:5: case 2: field 'weight':")


def test_bad_predicate_names_the_argument_and_the_problem(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - id: cheap
          input: Find headphones
          expected_tool_calls:
            - name: search_products
              arguments: {max_price: {"<=": cheap}}
    """,
    )
    message = error_of(path)
    assert message.startswith(
        f"{path}:5: case 1 (id 'cheap'): field 'expected_tool_calls.0.arguments':"
    )
    assert "'max_price'" in message and "lte needs a number" in message


def test_unknown_predicate_operator_lists_the_valid_ones(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - input: Find headphones
          expected_tool_calls:
            - name: search_products
              arguments: {max_price: {"<=": 300, at_most: 300}}
    """,
    )
    message = error_of(path)
    assert "at_most" in message and "one_of" in message


def test_missing_input_names_the_case(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - input: fine
        - expected_tools: [get_user_orders]
    """,
    )
    message = error_of(path)
    assert message.startswith(f"{path}:2: case 2: ")
    assert "a case needs 'input' or 'turns'" in message


def test_duplicate_id_names_both_cases(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - id: a
          input: one
        - id: a
          input: two
    """,
    )
    message = error_of(path)
    assert message.startswith(f"{path}:3: case 2: field 'id': duplicate id 'a'")
    assert "first used by case 1" in message


def test_budget_naming_both_an_agent_and_a_tool_is_rejected(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - input: one
          budgets: [{agent: triage, tool: search, max_calls: 2}]
    """,
    )
    assert "exactly one of 'agent' or 'tool'" in error_of(path)


def test_unknown_top_level_key_is_named(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        thresold: 0.5
        cases: [{input: one}]
    """,
    )
    assert error_of(path) == f"{path}:1: field 'thresold': unknown field; did you mean 'threshold'?"


def test_10_16_every_error_of_the_file_is_reported_at_once_on_its_fields_line(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - id: a
          input: first
          mustContain: ["21"]
        - id: b
          input: second
          tier: nightly
          weight: -1
        - id: a
          input: third
    """,
    )
    assert error_of(path).splitlines() == [
        f"{path}:3: case 1 (id 'a'): field 'mustContain': unknown field; "
        "did you mean 'must_contain'?",
        f"{path}:6: case 2 (id 'b'): field 'tier': Input should be 'smoke' or 'full'",
        f"{path}:7: case 2 (id 'b'): field 'weight': Input should be greater than 0",
        # the duplicate id too, though other fields are invalid (issue 27, defect 12)
        f"{path}:8: case 3 (id 'a'): field 'id': duplicate id 'a' (first used by case 1)",
    ]


def test_a_missing_input_is_reported_beside_other_fields_errors(tmp_path):
    path = write(
        tmp_path,
        "d.yaml",
        """
        - id: a
          tier: nightly
    """,
    )
    assert error_of(path).splitlines() == [
        f"{path}:1: case 1 (id 'a'): field '(case)': a case needs 'input' or 'turns' "
        "(or a simulated 'user')",
        f"{path}:2: case 1 (id 'a'): field 'tier': Input should be 'smoke' or 'full'",
    ]


def test_10_16_a_json_field_error_names_the_fields_line(tmp_path):
    path = write(
        tmp_path,
        "d.json",
        """
        [
          {"id": "a",
           "input": "first",
           "must_contian": ["x"]}
        ]
    """,
    )
    assert error_of(path).startswith(f"{path}:4: case 1 (id 'a'): field 'must_contian': unknown")
    assert "did you mean 'must_contain'?" in error_of(path)


def test_10_16_every_duplicate_id_is_reported(tmp_path):
    path = write(
        tmp_path, "d.yaml", "- {id: a, input: one}\n- {id: a, input: two}\n- {id: a, input: x}\n"
    )
    assert [m.split(": ", 1)[0] for m in error_of(path).splitlines()] == [f"{path}:2", f"{path}:3"]


def test_invalid_yaml_is_reported_with_the_file(tmp_path):
    path = write(tmp_path, "d.yaml", "- input: [unclosed\n")
    assert error_of(path).startswith(f"{path}: invalid YAML")


def test_invalid_json_is_reported_with_the_file(tmp_path):
    path = write(tmp_path, "d.json", "[{,}]")
    assert error_of(path).startswith(f"{path}: invalid JSON")


def test_invalid_jsonl_line_is_reported_with_its_line(tmp_path):
    path = write(tmp_path, "d.jsonl", '{"input": "one"}\n{oops\n')
    assert error_of(path).startswith(f"{path}:2: invalid JSON")


def test_scalar_dataset_is_rejected(tmp_path):
    assert "list of cases" in error_of(write(tmp_path, "d.yaml", "just text\n"))


def test_missing_file_is_a_dataset_error(tmp_path):
    assert "cannot read dataset" in error_of(tmp_path / "absent.yaml")


# --- case helpers ---------------------------------------------------------------------------------


def test_turns_set_the_input_to_the_first_turn():
    case = Case(turns=["Show me my orders", "Cancel the second one"])
    assert case.input == "Show me my orders"


def test_explicit_input_is_kept_alongside_turns():
    assert Case(input="Hello", turns=["Hi", "Bye"]).input == "Hello"


def test_empty_turns_without_input_are_rejected():
    with pytest.raises(ValueError, match="needs 'input' or 'turns'"):
        Case(turns=[])


def test_all_expected_tools_adds_names_of_expected_calls():
    case = Case(
        input="x",
        expected_tools=["search"],
        expected_tool_calls=[{"name": "search"}, {"name": "details"}],
    )
    assert case.all_expected_tools == ["search", "details"]


def test_all_expected_tools_is_a_multiset():
    case = Case(
        input="x",
        expected_tools=["search"],
        expected_tool_calls=[{"name": "search"}, {"name": "search"}],
    )
    assert case.all_expected_tools == ["search", "search"]


def test_all_expected_tools_from_calls_only():
    case = Case(input="x", expected_tool_calls=[{"name": "refund"}])
    assert case.all_expected_tools == ["refund"]


def test_trace_ids_are_a_lowercase_list():
    assert Case(input="x", trace_id="ABC").trace_ids == ["abc"]
    assert Case(input="x", trace_id=["A", "b"]).trace_ids == ["a", "b"]
    assert Case(input="x").trace_ids == []


def test_defaults_of_a_case():
    case = Case(input="x")
    assert (case.order, case.contain_scope, case.tier, case.weight) == ("any", "final", "full", 1.0)
