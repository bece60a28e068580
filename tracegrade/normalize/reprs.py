"""Python reprs recorded in place of data, read back into data with :mod:`ast`.

Frameworks that trace themselves record what they do not know how to serialise as
``str(obj)``: ``ChatCompletion(id='c1', choices=[Choice(message=ChatCompletionMessage(
content='Hi', role='assistant'))])``, ``ChatMessage(_role=<ChatRole.USER: 'user'>,
_content=[TextContent(text='hi')])``, ``{'order_id': 'A1'}``. Such a repr is data written in
Python's syntax, so it is parsed with :func:`ast.parse` (never evaluated):

- literals (strings, numbers, ``None``/``True``/``False``, lists, tuples, dicts, sets) are
  their values, as :func:`ast.literal_eval` gives them;
- a call ``Name(a=1, b=...)`` (a dataclass, pydantic model or attrs repr) is the mapping of its
  keyword arguments, keys without a leading ``_`` (``_role`` -> ``role``), plus
  ``"__type__": "Name"``; positional arguments are kept under ``"__args__"``;
- an enum repr ``<ChatRole.USER: 'user'>`` is its value (``'user'``); a default repr ``<pkg.C
  object at 0x...>`` (or ``<function f at 0x...>``) is ``None`` (it carries nothing).

:func:`parse_repr` returns ``None`` for text that is not a whole repr (plain text, JSON, a repr
cut at a size limit), and never parses more than :data:`MAX_REPR_CHARS` characters: the
parser is linear in its input, but a span attribute has no business being larger.
"""

from __future__ import annotations

import ast
import re
from typing import Any

MAX_REPR_CHARS = 262_144
"""Longest repr parsed (256 Ki characters); a longer value is left as text."""

_ENUM = re.compile(r"<([A-Za-z_][\w.]{0,200}): ('(?:[^'\\\n]|\\.){0,1000}'|-?\d{1,20})>")
_DEFAULT = re.compile(r"<[A-Za-z_](?:[^<>\n]|<[A-Za-z_]{1,20}>){0,300} at 0x[0-9A-Fa-f]{1,32}>")
_HEAD = re.compile(r"\s*(?:[A-Za-z_][\w.]{0,200}\(|\[|\{|\()")


class _NotData(Exception):
    """The node is no data (a name, an operator, an attribute access...)."""


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {
            _key(k): _value(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None
        }
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _value(node.operand)
        if isinstance(value, (int, float)):
            return -value
    if isinstance(node, ast.Name) and node.id in ("inf", "nan"):
        return None
    raise _NotData


def _key(node: ast.AST) -> Any:
    key = _value(node)
    return key if isinstance(key, (str, int, float, bool)) or key is None else str(key)


def _call(node: ast.Call) -> dict[str, Any]:
    name = ast.unparse(node.func) if isinstance(node.func, (ast.Name, ast.Attribute)) else ""
    data: dict[str, Any] = {"__type__": name.rsplit(".", 1)[-1]}
    for keyword in node.keywords:
        if keyword.arg is not None:
            data[keyword.arg.lstrip("_") or keyword.arg] = _value(keyword.value)
    if node.args:
        data["__args__"] = [_value(a) for a in node.args]
    return data


def looks_like_repr(text: str) -> bool:
    """True when ``text`` could be a repr (``Name(``, ``[``, ``{`` or ``(`` first, and a
    closing bracket last): a cheap test before :func:`parse_repr`."""
    stripped = text.rstrip()
    return bool(stripped) and stripped[-1] in ")]}" and _HEAD.match(text) is not None


def parse_repr(text: str) -> Any:
    """The data a repr holds (module docstring), or ``None`` when ``text`` is not one."""
    if len(text) > MAX_REPR_CHARS or not looks_like_repr(text):
        return None
    source = _DEFAULT.sub("None", _ENUM.sub(lambda m: m.group(2), text.strip()))
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    try:
        return _value(tree.body)
    except (_NotData, RecursionError):
        return None
