"""Untrusted YAML and JSON within bounds (:mod:`tracegrade._util.bounded`): alias bombs, self
references and deep nesting are refused at once with a parser error; ordinary anchors load."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tracegrade._util.bounded import MAX_DEPTH, YamlLimitError, load_json, load_yaml, too_deep
from tracegrade.cli import cli
from tracegrade.config import load_config
from tracegrade.dataset import load_dataset
from tracegrade.errors import ConfigError, DatasetError

LAUGHS = "\n".join(f"    l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 9))
BOMB = f"""cases:
  - id: lol
    input: hi
    metadata:
      l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]
  {LAUGHS.replace(chr(10), chr(10) + "  ")}
"""


def test_a_billion_laughs_dataset_is_refused_at_once(tmp_path: Path) -> None:
    assert len(BOMB) < 700
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    started = time.monotonic()
    with pytest.raises(DatasetError, match="aliases expand"):
        load_dataset(path)
    result = CliRunner().invoke(cli, ["score", "--dataset", str(path), str(path)])
    assert result.exit_code == 2 and "aliases expand" in result.output
    assert time.monotonic() - started < 5


def test_a_bomb_in_the_config_is_a_config_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tracegrade.yaml").write_text(
        "weights: &w {a: ["
        + ", ".join(["1"] * 9)
        + "]}\n"
        + "\n".join(
            f"x{n}: &x{n} [{', '.join(['*w' if n == 0 else f'*x{n - 1}'] * 9)}]" for n in range(8)
        )
    )
    with pytest.raises(ConfigError, match="aliases expand"):
        load_config()


def test_self_reference_and_depth_are_refused() -> None:
    with pytest.raises(YamlLimitError, match="recursive"):
        load_yaml("a: &a [1, *a]")
    with pytest.raises(YamlLimitError, match="deeper"):
        load_yaml("[" * 5000 + "]" * 5000)
    with pytest.raises(YamlLimitError, match="deeper"):  # depth built from aliases
        load_yaml(
            "\n".join(
                ["a0: &a0 [x]", *(f"a{n}: &a{n} [*a{n - 1}]" for n in range(1, MAX_DEPTH + 5))]
            )
        )
    with pytest.raises(json.JSONDecodeError, match="deeper"):
        load_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(json.JSONDecodeError, match="deeper"):
        load_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


def test_ordinary_anchors_and_merges_load_as_before() -> None:
    text = "defaults: &d {max_turns: 3}\ncases:\n  - {<<: *d, id: a}\n  - {<<: *d, id: b}\n"
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml("") is None and not too_deep({"a": [[{"b": 1}]]})


def test_a_deep_json_dataset_is_a_dataset_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(
        '{"cases": [{"id": "a", "input": "x", "metadata": ' + "[" * 50_000 + "]" * 50_000 + "}]}"
    )
    with pytest.raises(DatasetError, match="deeper"):
        load_dataset(path)
    path = tmp_path / "deep.yaml"
    path.write_text("cases:\n- id: a\n  input: x\n  metadata: " + "[" * 5000 + "]" * 5000)
    with pytest.raises(DatasetError, match="deeper"):
        load_dataset(path)
