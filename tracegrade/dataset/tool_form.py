"""The case editor's tool fields as rows to pick from, not YAML to type.

``expected_tools`` is a list of rows (one tool name each); ``expected_tool_calls`` is a list
of call blocks: a tool name, *required*, and argument rows (key, operator, value). The rows
are another view of the same form values the editor already reads and writes
(:func:`tracegrade.dataset.editing.form_values`): :func:`call_rows` turns the YAML text of
``expected_tool_calls`` into blocks, :func:`collect` turns a submitted form back into the two
text values. A call the rows cannot show (several operators on one argument, nested
predicates, ``allow_extra_arguments``) keeps the whole list in YAML, as before.

Form fields: ``expected_tool`` (repeated), ``call-I-name``, ``call-I-required``,
``call-I-arg-J-key``, ``call-I-arg-J-op``, ``call-I-arg-J-value`` (values are YAML scalars or
flow lists: ``300``, ``abc-123``, ``[a, b]``, ``"300"`` for the string).
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from tracegrade._util.bounded import YamlLimitError, check_yaml

OPERATORS: tuple[tuple[str, str], ...] = (
    ("is", "is"),
    ("one_of", "is one of"),
    ("regex", "matches regex"),
    ("contains", "contains"),
    ("lte", "≤"),
    ("gte", "≥"),
    ("lt", "<"),
    ("gt", ">"),
    ("subset", "includes all of"),
    ("any", "is present"),
)
"""(operator, label) offered per argument row; ``is`` writes the plain value."""
_ALIASES = {"<=", ">=", "<", ">", "eq", "in", "equals"}
_KNOWN = {op for op, _ in OPERATORS} | _ALIASES
_CALL_KEYS = {"name", "arguments", "required"}
_FIELD = re.compile(r"^call-(\d+)-(name|required|arg-(\d+)-(key|op|value))$")


@dataclass
class ArgumentRow:
    """One argument predicate: ``op`` as written (an alias such as ``<=`` is kept)."""

    key: str = ""
    op: str = "is"
    value: str = ""


@dataclass
class CallRow:
    """One expected tool call."""

    name: str = ""
    required: bool = False
    arguments: list[ArgumentRow] = field(default_factory=list)


def _flow(value: Any) -> str:
    """A value as a YAML scalar or flow list that reads back to the same value."""
    if isinstance(value, str):
        try:
            plain = yaml.safe_load(value) == value and value == value.strip()
        except yaml.YAMLError:
            plain = False
        return value if plain and value else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def _argument(key: str, spec: Any) -> ArgumentRow | None:
    if not isinstance(spec, Mapping):
        return ArgumentRow(key, "is", _flow(spec))
    if len(spec) != 1:
        return None
    ((op, value),) = spec.items()
    return ArgumentRow(key, str(op), _flow(value)) if op in _KNOWN else None


def _call(call: Any) -> CallRow | None:
    if not isinstance(call, Mapping) or not set(call) <= _CALL_KEYS or "name" not in call:
        return None
    arguments = call.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        return None
    rows = [_argument(str(k), v) for k, v in arguments.items()]
    if any(r is None for r in rows):
        return None
    return CallRow(str(call["name"]), bool(call.get("required")), [r for r in rows if r])


def call_rows(text: str) -> list[CallRow] | None:
    """The blocks of an ``expected_tool_calls`` form value (YAML), or None when some call
    cannot be shown as rows (or the text is not YAML): the form then shows the YAML."""
    if not text.strip():
        return []
    try:
        check_yaml(text)
        calls = YAML(typ="safe").load(textwrap.dedent(text))
    except (YAMLError, YamlLimitError, ValueError):
        return None
    if not isinstance(calls, list):
        return None
    rows = [_call(c) for c in calls]
    return None if any(r is None for r in rows) else [r for r in rows if r]


def _value(text: str) -> Any:
    text = text.strip()
    try:
        check_yaml(text)
        return YAML(typ="safe").load(text)
    except (YAMLError, YamlLimitError, ValueError):
        return text  # load_dataset says what is wrong with it, next to the field


def _submitted(form: Mapping[str, Sequence[str]]) -> list[CallRow]:
    blocks: dict[int, CallRow] = {}
    arguments: dict[tuple[int, int], ArgumentRow] = {}
    for name, values in form.items():
        match = _FIELD.match(name)
        if not match or not values:
            continue
        block = blocks.setdefault(int(match.group(1)), CallRow())
        value = values[-1]
        if match.group(2) == "name":
            block.name = value.strip()
        elif match.group(2) == "required":
            block.required = True
        else:
            row = arguments.setdefault((int(match.group(1)), int(match.group(3))), ArgumentRow())
            setattr(row, match.group(4), value)
    for (i, _), row in sorted(arguments.items()):
        if row.key.strip():
            blocks[i].arguments.append(row)
    return [blocks[i] for i in sorted(blocks) if blocks[i].name]


def _spec(row: ArgumentRow) -> Any:
    if row.op == "any":
        return {"any": True}
    value = _value(row.value)
    return value if row.op == "is" else {row.op: value}


def calls_yaml(rows: Sequence[CallRow]) -> str:
    """The ``expected_tool_calls`` form value (YAML) of call blocks ("" for none)."""
    calls: list[dict[str, Any]] = []
    for row in rows:
        call: dict[str, Any] = {"name": row.name}
        if row.arguments:
            call["arguments"] = {a.key.strip(): _spec(a) for a in row.arguments}
        if row.required:
            call["required"] = True
        calls.append(call)
    if not calls:
        return ""
    out = io.StringIO()
    YAML().dump(calls, out)
    return out.getvalue()


def collect(form: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The text values of ``expected_tools`` and ``expected_tool_calls`` from a submitted
    form's rows (``form``: every field's values); {} for a field the form gave as text."""
    out: dict[str, str] = {}
    if "expected_tool" in form:
        out["expected_tools"] = "\n".join(v.strip() for v in form["expected_tool"] if v.strip())
    if form.get("tool_calls_as") == ["rows"]:
        out["expected_tool_calls"] = calls_yaml(_submitted(form))
    return out
