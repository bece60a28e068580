"""Dataset errors that say where: the line of the field itself, every error of the file at
once, and the closest field name for an unknown one.

A dataset's problems come from pydantic's validation (all of them at once) and from the
mapping of the design documents' shapes (:mod:`tracegrade.dataset.shapes`). Each becomes one
line ``FILE:LINE: case N (id 'x'): field 'a.b': message``; the line is found by walking the
YAML node tree (JSON is YAML too) along the error's path, down to the deepest node that
exists: the unknown key itself, the bad value, else the case. JSONL cases are one per line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from tracegrade._util.yaml_lines import Path_, compose, model_fields, node_line, suggestion

__all__ = ["Located", "locate", "messages", "suggestion", "validation_problems"]


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
    root = compose(text)
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
