"""Mapping files (``score --mapping FILE``): which trace(s) each golden case scores.

A mapping file is a YAML (or JSON) object of case id -> trace id, or a list of trace ids::

    orders-recent: 4bf92f3577b34da6a3ce929d0e0e4736
    return-laptop: [0af7651916cd43dd8448eb211c80319c, 5b8aa5a2d2c872e8321cf37308d69df2]

Every error names the mapping file, and where it can, the line and the case id.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

import yaml

from tracegrade.errors import ConfigError

_TRACE_ID = re.compile(r"[0-9a-f]{32}")


def _where(path: str, node: yaml.Node | None) -> str:
    return f"--mapping {path}" + (f":{node.start_mark.line + 1}" if node is not None else "")


def load_mapping(path: str | Path, case_ids: Collection[str] | None = None) -> dict[str, list[str]]:
    """The mapping in ``path`` (case id -> lowercase trace ids).

    ``case_ids``, when given, are the dataset's case ids: a mapped id that is none of them is
    an error (a typo would otherwise leave the case matched by input, silently).

    Raises:
        ConfigError: the file cannot be read or is not YAML/JSON, is not an object, a value is
            not a trace id or a list of them, or a case id is not in the dataset; the message
            names the file (and the line).
    """
    path = str(path)
    try:
        root = yaml.compose(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--mapping {path}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"--mapping {path}{line}: invalid YAML/JSON: {problem}") from exc
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(f"{_where(path, root)}: expected an object of case id -> trace id(s)")
    mapping: dict[str, list[str]] = {}
    for key, value in root.value:
        case_id = str(key.value)
        if case_ids is not None and case_id not in case_ids:
            raise ConfigError(f"{_where(path, key)}: case {case_id!r} is not in the dataset")
        mapping[case_id] = _trace_ids(path, case_id, value)
    return mapping


def _trace_ids(path: str, case_id: str, node: yaml.Node) -> list[str]:
    items = node.value if isinstance(node, yaml.SequenceNode) else [node]
    ids = []
    for item in items:
        if not isinstance(item, yaml.ScalarNode) or not str(item.value).strip():
            raise ConfigError(
                f"{_where(path, item)}: case {case_id!r}: expected a trace id or a list of them"
            )
        trace_id = str(item.value).strip().lower()
        if not _TRACE_ID.fullmatch(trace_id):
            raise ConfigError(
                f"{_where(path, item)}: case {case_id!r}: {item.value!r} is not a trace id "
                "(32 hex digits)"
            )
        ids.append(trace_id)
    return ids
