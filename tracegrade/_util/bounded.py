"""Untrusted YAML and JSON (datasets, config, trace files) parsed within bounds.

- **Aliases**: a YAML document whose aliases would expand to more than
  :data:`MAX_ALIAS_NODES` nodes beyond the document's own (a 561-byte "billion laughs"
  dataset expands to 10^9), or that refers to itself (``&a [*a]``), is refused. PyYAML
  shares an alias's object rather than copying it, so loading is cheap; what hangs is every
  later walk of the data (validation, JSON output, hashing), which sees the expansion.
- **Depth**: data nested deeper than :data:`MAX_DEPTH` levels (aliases counted as expanded)
  is refused, rather than failing later with a ``RecursionError`` traceback in whatever walks
  it (the parsers themselves recurse, and give up near Python's recursion limit).

Errors are the parsers' own types so callers report them where they report a syntax error:
:class:`YamlLimitError` is a ``yaml.YAMLError``; a JSON refusal is a
``json.JSONDecodeError``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

MAX_ALIAS_NODES = 100_000
"""Nodes that aliases may add to a YAML document once expanded."""
MAX_DEPTH = 200
"""Deepest nesting of lists and mappings accepted (no dataset, config or span needs 20)."""


class YamlLimitError(yaml.YAMLError):
    """A YAML document over :data:`MAX_ALIAS_NODES` or :data:`MAX_DEPTH`, or self-referring."""


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` within the bounds of the module docstring.

    Raises:
        yaml.YAMLError: the text is not YAML (PyYAML's error), or :class:`YamlLimitError`.
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels") from None
        if node is None:
            return None
        check_yaml_node(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def check_yaml(text: str) -> None:
    """Refuse ``text`` when it is YAML over the bounds (see :func:`load_yaml`); text that does
    not parse is left to the caller's own parser to report.

    Raises:
        YamlLimitError: over the bounds.
    """
    try:
        load_yaml(text)
    except YamlLimitError:
        raise
    except yaml.YAMLError:
        return


def check_yaml_node(root: yaml.Node) -> None:
    """Walk a composed node graph once (each distinct node once): its expanded size and depth.

    Raises:
        YamlLimitError: aliases add over :data:`MAX_ALIAS_NODES` nodes, the expansion is
            nested over :data:`MAX_DEPTH`, or a node contains itself.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    distinct = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            open_nodes.discard(key)
            if depth[key] > MAX_DEPTH:
                raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels")
            if size[key] > distinct + MAX_ALIAS_NODES:
                raise YamlLimitError(
                    f"aliases expand to over {MAX_ALIAS_NODES:,} more nodes than the document "
                    "holds (a 'billion laughs' document?); write the values out instead"
                )
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise YamlLimitError("an alias refers to a node that contains it (recursive)")
        open_nodes.add(key)
        distinct += 1
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_json(text: str | bytes) -> Any:
    """``json.loads(text)``, refusing data nested deeper than :data:`MAX_DEPTH`.

    Raises:
        json.JSONDecodeError: not JSON, or nested too deeply.
    """
    try:
        data = json.loads(text)
    except RecursionError:
        data = None
        deep = True
    else:
        deep = too_deep(data)
    if deep:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", doc, 0)
    return data


def too_deep(data: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``data`` (lists and dicts) nests deeper than ``limit`` levels; iterative, so
    any depth is measured without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return False
