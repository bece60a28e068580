"""Dataset errors that say where: the line of the field itself, every error of the file at
once, and the closest field name for an unknown one.

A dataset's problems come from pydantic's validation (all of them at once) and from the
mapping of the design documents' shapes (:mod:`tracegrade.dataset.shapes`). Each becomes one
line ``FILE:LINE: case N (id 'x'): field 'a.b': message``; the line is found by walking the
YAML node tree (JSON is YAML too) along the error's path, down to the deepest node that
exists: the unknown key itself, the bad value, else the case. JSONL cases are one per line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

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


@dataclass
class Located:
    """Where the cases of a dataset file are: the YAML node tree of the whole file (None for
    JSONL), or one line per case (JSONL), and whether the cases are the file's top level."""

    root: yaml.Node | None
    case_lines: list[int]
    cases_at_top: bool

    def line(self, path: Path_, *, key: bool = False) -> int | None:
        """The line of ``path`` (``("cases", i, field, ...)`` or top-level ``(field, ...)``)."""
        if path[:1] == ("cases",) and len(path) > 1 and isinstance(path[1], int):
            if self.root is None:
                index = path[1]
                return self.case_lines[index] if index < len(self.case_lines) else None
            if self.cases_at_top:
                return node_line(self.root, path[1:], key=key)
        return node_line(self.root, path, key=key)


def locate(text: str, case_lines: list[int] | None) -> Located:
    """The :class:`Located` of a dataset's text (``case_lines`` given for JSONL)."""
    if case_lines is not None:
        return Located(None, case_lines, True)
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        root = None
    return Located(root, [], isinstance(root, yaml.SequenceNode))


def messages(
    source: str,
    where: Located,
    data: Mapping[str, Any],
    problems: Sequence[tuple[Path_, str, bool]],
) -> list[str]:
    """One ``FILE:LINE: case N (id 'x'): field 'a.b': message`` per problem (``(path,
    message, is_unknown_key)``), duplicates dropped, in file order."""
    out: dict[str, int] = {}
    for path, message, unknown in problems:
        line = where.line(path, key=unknown)
        text = f"{source}{f':{line}' if line else ''}: {_label(path, data)}{message}"
        out.setdefault(text, line or 0)
    return sorted(out, key=lambda m: out[m])


def _label(path: Path_, data: Mapping[str, Any]) -> str:
    if path[:1] == ("cases",) and len(path) > 1 and isinstance(path[1], int):
        index = path[1]
        cases = data.get("cases") or []
        raw = cases[index] if index < len(cases) else {}
        case_id = raw.get("id") if isinstance(raw, Mapping) else None
        label = f"case {index + 1}" + (f" (id {case_id!r})" if case_id else "")
        field = ".".join(str(p) for p in path[2:]) or "(case)"
        return f"{label}: field '{field}': "
    return f"field '{'.'.join(str(p) for p in path) or '(top level)'}': "


def validation_problems(
    exc: ValidationError, model: type[BaseModel], case_aliases: Sequence[str] = ()
) -> list[tuple[Path_, str, bool]]:
    """Every error of ``exc`` as ``(path, message, is_unknown_key)``; an unknown key's message
    suggests the closest field of the model it was found in (for a case, also the keys of the
    other accepted shapes, ``case_aliases``)."""
    problems = []
    for error in exc.errors():
        path = tuple(error["loc"])
        if error["type"] == "extra_forbidden":
            known = model_fields(model, path[:-1])
            if len(path) == 3 and path[0] == "cases":
                known += case_aliases
            message = "unknown field" + suggestion(str(path[-1]), known)
            problems.append((path, message, True))
        else:
            problems.append((path, error["msg"], False))
    return problems
