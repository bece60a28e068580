"""Where a YAML file says something, and the closest known name: what errors about a
dataset (:mod:`tracegrade.dataset.located`) and a config file (:mod:`tracegrade.config`) use to
name the line and suggest a fix.

The line is found by walking the YAML node tree (``yaml.compose``; JSON is YAML too) along a
validation error's path, down to the deepest node that exists. A suggestion is the closest of
the known names (difflib, cutoff 0.6; camelCase and case ignored).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import BaseModel

Path_ = tuple[str | int, ...]


def suggestion(key: str, known: Sequence[str]) -> str:
    """``"; did you mean 'must_contain'?"`` for the closest of ``known`` (camelCase and case
    ignored), or ``""`` when none is close."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()
    by_snake = {name.lower(): name for name in known}
    if snake in by_snake and by_snake[snake] != key:
        return f"; did you mean {by_snake[snake]!r}?"
    close = difflib.get_close_matches(snake, list(by_snake), n=1, cutoff=0.6)
    return f"; did you mean {by_snake[close[0]]!r}?" if close else ""


def model_fields(model: type[BaseModel], path: Path_) -> list[str]:
    """The field names of the model found at ``path`` under ``model`` (list indexes and
    dict keys skipped), for suggestions; [] when the path leaves the models."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = _model_in(field.annotation)
    return list(getattr(current, "model_fields", {}))


def _model_in(annotation: Any) -> Any:
    """The pydantic model inside ``X``, ``list[X]``, ``X | None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def compose(text: str) -> yaml.Node | None:
    """The YAML node tree of ``text``; None when it does not parse."""
    try:
        return yaml.compose(text)
    except yaml.YAMLError:
        return None


def node_line(root: yaml.Node | None, path: Path_, *, key: bool = False) -> int | None:
    """1-based line of the node at ``path`` (of its key when ``key``), or of the deepest
    node on the way; None without a tree."""
    node, line = root, None
    for index, part in enumerate(path):
        if node is None:
            break
        line = node.start_mark.line + 1
        node, key_node = _child(node, part)
        if key_node is not None and key and index == len(path) - 1:
            return key_node.start_mark.line + 1
    if node is not None:
        line = node.start_mark.line + 1
    return line


def _child(node: yaml.Node, part: str | int) -> tuple[yaml.Node | None, yaml.Node | None]:
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            if getattr(key_node, "value", None) == str(part):
                return value, key_node
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part], None
    return None, None
