"""Command-line edges found by trying tracegrade as a new user would (issue 10 items 15,
17, 18): text files, empty or missing stores, bad ``--mapping`` files."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tracegrade.cli import cli

DATASETS = Path(__file__).parents[2] / "datasets"
TEXT = DATASETS / "SOURCES.md"
"""A real text file of the repository (Markdown, not JSON)."""


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_10_15_score_and_import_name_the_lines_of_a_text_file():
    for command in ("score", "import"):
        result = run(command, TEXT)
        assert result.exit_code == 2, result.output
        assert f"{TEXT}:1: text line, not JSON" in result.stderr
        assert "Wire format" not in result.stderr and "protobuf:" not in result.stderr


def test_10_17_score_against_a_missing_store_names_it_and_creates_nothing(_isolated_store):
    result = run("score")
    assert result.exit_code == 2
    assert f"no trace store at {_isolated_store}" in result.stderr
    assert not _isolated_store.parent.exists()


def test_10_17_score_inspect_and_lint_on_an_empty_store_exit_2_naming_it(tmp_path):
    db = tmp_path / "empty.db"
    assert run("import", TEXT, "--db", db).exit_code == 2  # creates the store, stores nothing
    for command in ("score", "inspect", "lint"):
        result = run(command, "--db", db)
        assert result.exit_code == 2, (command, result.output)
        assert f"no traces in the trace store {db}" in result.stderr
    result = run("score", "--db", db, "--since", "1h")
    assert f"no traces in the trace store {db} (check --since)" in result.stderr


def test_10_17_db_in_a_directory_that_does_not_exist_is_an_error(tmp_path):
    target = tmp_path / "typo" / "store.db"
    for args in (("import", TEXT), ("inspect",), ("score",)):
        result = run(*args, "--db", target)
        assert result.exit_code == 2
        assert f"directory '{target.parent}' does not exist" in result.stderr
    assert not target.parent.exists()


TRACES = DATASETS / "tau-bench-otlp" / "openinference" / "traces.jsonl.gz"
SEEDS = DATASETS / "e-commerce-agents" / "order_management.json"


def _score_with_mapping(tmp_path: Path, text: str):
    mapping = tmp_path / "map.yaml"
    mapping.write_text(text)
    return mapping, run("score", TRACES, "--dataset", SEEDS, "--mapping", mapping, "--no-save")


def test_10_18_a_trace_id_that_is_not_one_names_the_mapping_file_and_line(tmp_path):
    mapping, result = _score_with_mapping(
        tmp_path,
        "order_management:1: 4bf92f3577b34da6a3ce929d0e0e4736\norder_management:2: 12345\n",
    )
    assert result.exit_code == 2
    assert (
        f"--mapping {mapping}:2: case 'order_management:2': '12345' is not a trace id"
        in result.stderr
    )


def test_10_18_invalid_yaml_and_unknown_cases_name_the_mapping_file(tmp_path):
    mapping, result = _score_with_mapping(tmp_path, "order_management:1: [4bf9\n")
    assert result.exit_code == 2 and f"--mapping {mapping}:2: invalid YAML/JSON" in result.stderr
    mapping, result = _score_with_mapping(tmp_path, "orders: 4bf92f3577b34da6a3ce929d0e0e4736\n")
    assert f"--mapping {mapping}:1: case 'orders' is not in the dataset" in result.stderr
    mapping, result = _score_with_mapping(tmp_path, "- 4bf92f3577b34da6a3ce929d0e0e4736\n")
    assert f"--mapping {mapping}:1: expected an object" in result.stderr
