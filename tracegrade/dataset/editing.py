"""Editing golden cases in a dataset's text, keeping YAML comments and key order.

The case editor's form (:data:`FIELDS`) covers the case fields people write by hand; a case's
other keys (budgets, clarifications, ...) are kept as they are. A dataset is parsed with
ruamel.yaml's round-trip loader (comments, order and quoting survive; JSON and JSONL files
are rewritten as JSON), changed, dumped, and validated by :func:`tracegrade.dataset.
load_dataset` itself before anything is written: the editor accepts exactly what
``tracegrade run`` accepts, and shows its error message next to the field it names.

A case written in a design document's shape (:mod:`tracegrade.dataset.shapes`: ``prompt``,
``rounds``, ``judge_prompt``, ``test_agent_revival``, an ``EvalCase`` input) is shown and saved
under its own keys (:data:`ALIASES`); turn objects and structured inputs are edited as YAML
(:data:`AS_YAML`). A case saved unchanged changes nothing, and a dataset whose cases did not
change dumps to its text byte for byte (JSON layout included).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import re
import stat
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.util import load_yaml_guess_indent

from tracegrade._util.bounded import YamlLimitError, check_yaml, load_json
from tracegrade.dataset import Case, Dataset, load_dataset_text
from tracegrade.errors import DatasetError

FIELDS: tuple[tuple[str, str, str], ...] = (
    ("id", "text", "Case id (runs are compared by it; left blank, one is made from the input)"),
    ("input", "textarea", "Input (the user's first message)"),
    ("turns", "lines", "Turns (one user message per line, for multi-turn cases)"),
    (
        "revive",
        "revive",
        "Revive the agent (true: before every turn after the first; or turns: 2, 3)",
    ),
    (
        "user",
        "yaml",
        "Simulated user (goal, persona, facts, stop, max_turns; replies and stop_when script it)",
    ),
    ("expected_tools", "lines", "Expected tools"),
    ("expected_tool_calls", "yaml", "Expected tool calls with argument predicates"),
    ("tool_calls_match", "choice", "Tool calls match (how the agent's calls meet the expected)"),
    (
        "arguments_match",
        "arguments",
        "Arguments match (exact, subset, superset, ignore, or the argument names to compare)",
    ),
    ("tool_calls_scope", "choice", "Tool calls counted (all, or the top-level agent's only)"),
    ("expected_fields", "lines", "Expected fields (one per line)"),
    ("must_contain", "lines", "Must contain (one phrase per line)"),
    ("must_not_contain", "lines", "Must not contain (one phrase per line)"),
    ("max_latency_ms", "number", "Latency budget (ms)"),
    ("judge_rubric", "textarea", "Judge rubric"),
    ("judge_threshold", "number", "Judge threshold (0-1)"),
    ("tier", "tier", "Tier"),
    ("tags", "csv", "Tags (comma-separated)"),
    ("category", "text", "Category"),
)
"""(form field, kind, label) of the case editor, in form order."""

CHOICES: dict[str, tuple[tuple[str, str], ...]] = {
    "tool_calls_match": (
        ("", "(default: superset, or the case's order)"),
        ("superset", "superset: every expected call, in any order; others allowed"),
        ("in_order", "in_order: the expected calls in their order; others between"),
        ("exact", "exact: the same calls in the same order, nothing more"),
        ("any_order", "any_order: the same calls in any order, nothing more"),
        ("subset", "subset: no tool outside the expected ones may be called"),
    ),
    "tool_calls_scope": (
        ("", "(default: all)"),
        ("all", "all: sub-agents' calls too, at their depth"),
        ("top_level", "top_level: the top-level agent's calls only"),
    ),
}
"""The options of each ``choice`` field: (value, text); the empty value leaves the key out
(docs/guides/trajectories.md)."""

ARGUMENT_MODES = ("exact", "subset", "superset", "ignore")
"""``arguments_match`` modes; any other text in its field is a list of argument names."""

ALIASES: dict[str, tuple[str, ...]] = {
    "input": ("input", "prompt"),
    "turns": ("turns", "rounds"),
    "revive": ("revive", "test_agent_revival"),
}
"""Form field -> the keys a case may write it under (tracegrade's, then the design documents'
of :mod:`tracegrade.dataset.shapes`): a field is read from and saved to the key the case uses."""

AS_YAML = ("input", "turns")
"""Fields shown as YAML (the form's ``NAME_as`` is ``yaml``) when their value is not plain
text: an ``EvalCase`` input (``{messages: [...]}``), turn objects (``{prompt, judge_prompt,
judge_threshold, revive}``)."""

_JUDGE_KEYS = {"rubric": "judge_prompt", "threshold": "judge_threshold"}

_SHOWN_KEYS = frozenset(
    [name for name, _, _ in FIELDS if not name.startswith("judge_")]
    + [key for keys in ALIASES.values() for key in keys]
    + ["judge", "metadata", *_JUDGE_KEYS.values()]
)

_FIELD_IN_ERROR = re.compile(r"field '([^']*)'")


class CaseError(DatasetError):
    """A case the editor cannot save. ``errors`` maps each form field (None: the dataset as a
    whole) to its messages, one per line of the message; ``field`` is the first field named."""

    def __init__(self, message: str, field: str | None):
        super().__init__(message)
        self.errors: dict[str | None, list[str]] = {}
        for line in message.splitlines() or [message]:
            if line.strip():
                self.errors.setdefault(_form_field(line) or field, []).append(line.strip())
        self.field = next(iter(self.errors), field)


def _yaml() -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def digest(text: str) -> str:
    """The version of a dataset text the editor checks before saving (sha256 hex)."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Document:
    """A parsed dataset text: ``root`` (a list of cases, or a mapping with ``cases``)."""

    root: Any
    suffix: str
    text: str = ""
    """The text parsed: :meth:`dump` gives it back unchanged when no case changed."""
    original: Any = field(default=None, repr=False, compare=False)
    """The parsed cases as plain data, to tell whether anything changed."""

    @classmethod
    def parse(cls, text: str, suffix: str) -> Document:
        """Parse a dataset's text (``suffix``: ``.yaml``/``.yml``, ``.json`` or ``.jsonl``).

        Raises:
            CaseError: the text does not parse, or has no case list.
        """
        try:
            if suffix == ".jsonl":
                root: Any = [load_json(line) for line in text.splitlines() if line.strip()]
            else:
                check_yaml(text)  # no alias bomb, no depth past the bound (ruamel has none)
                root = _yaml().load(text) if text.strip() else {"cases": []}
        except (YAMLError, YamlLimitError, json.JSONDecodeError) as exc:
            raise CaseError(f"the dataset does not parse: {exc}", None) from exc
        document = cls(root, suffix, text, _plain(root))
        document.cases  # noqa: B018 - raises when there is no case list
        return document

    @property
    def cases(self) -> list[Any]:
        """The dataset's list of case mappings (edited in place)."""
        cases = self.root.get("cases") if isinstance(self.root, Mapping) else self.root
        if not isinstance(cases, list):
            raise CaseError("the dataset has no list of cases", None)
        return cases

    def dump(self) -> str:
        """The dataset's text after the edits: the text parsed, byte for byte, when nothing
        changed (a JSON file keeps its own layout); else YAML with the file's comments and its
        indentation, JSON indented by 2."""
        if self.text and not self.changed:
            return self.text
        if self.suffix == ".jsonl":
            return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in self.cases)
        if self.suffix == ".json":
            return json.dumps(self.root, indent=2, ensure_ascii=False) + "\n"
        out = io.StringIO()
        yaml = _yaml()
        if self.text.strip():
            _, indent, offset = load_yaml_guess_indent(self.text)
            if indent is not None and offset is not None:
                yaml.indent(mapping=2, sequence=max(indent, offset + 2), offset=offset)
        yaml.dump(self.root, out)
        return out.getvalue()

    @property
    def changed(self) -> bool:
        """Whether any case differs from the text parsed (as data: layout aside)."""
        return bool(_plain(self.root) != self.original)

    def case(self, index: int) -> Any:
        """The case mapping at ``index`` (from 0).

        Raises:
            CaseError: no case there.
        """
        if not 0 <= index < len(self.cases):
            raise CaseError(f"no case {index + 1} in this dataset", None)
        return self.cases[index]

    def duplicate(self, index: int) -> int:
        """Insert a copy of case ``index`` after it (its id suffixed ``-copy``); returns the
        copy's index."""
        clone = copy.deepcopy(self.case(index))
        if isinstance(clone, dict) and clone.get("id"):
            ids = {c.get("id") for c in self.cases if isinstance(c, Mapping)}
            base, n = f"{clone['id']}-copy", 2
            new_id = base
            while new_id in ids:
                new_id, n = f"{base}-{n}", n + 1
            clone["id"] = new_id
        self.cases.insert(index + 1, clone)
        return index + 1

    def delete(self, index: int) -> None:
        """Remove case ``index``."""
        self.case(index)
        del self.cases[index]

    def pin_ids(self, dataset: Dataset) -> None:
        """Write each case's id into the cases that have none: ``load_dataset`` names them
        by position (``NAME:N``), so deleting or inserting a case would rename every later one
        and runs would pair different cases. ``dataset`` is this text loaded."""
        for mapping, case in zip(self.cases, dataset.cases, strict=False):
            if isinstance(mapping, dict) and not mapping.get("id") and case.id:
                _put_first(mapping, "id", case.id)

    def new_id(self, text: str) -> str:
        """A stable id for a new case: the first words of ``text`` (its input) as a slug
        (``find-wireless-headphones-under-300``), suffixed ``-2``, ``-3`` ... when taken;
        ``case-N`` without words."""
        words = _WORDS.findall(text.casefold())
        base = "-".join(words)[:48].strip("-") or f"case-{len(self.cases) + 1}"
        taken = {str(c.get("id")) for c in self.cases if isinstance(c, Mapping)}
        new, n = base, 2
        while new in taken:
            new, n = f"{base}-{n}", n + 1
        return new


_WORDS = re.compile(r"\w+")


def _put_first(mapping: Any, key: str, value: Any) -> None:
    """Set ``key`` as the mapping's first key (a YAML case keeps its comments)."""
    if hasattr(mapping, "insert"):
        mapping.insert(0, key, value)
        return
    rest = list(mapping.items())
    mapping.clear()
    mapping[key] = value
    mapping.update(rest)


def _lines(value: Any) -> str:
    return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value or "")


def key_of(case: Mapping[str, Any], name: str) -> str:
    """The key ``case`` writes form field ``name`` under (:data:`ALIASES`; its own name when
    the case has none of them)."""
    return next((k for k in ALIASES.get(name, ()) if k in case), name)


def _judge(case: Mapping[str, Any]) -> dict[str, Any]:
    """The case's judge rubric and threshold, from ``judge`` or the top-level
    ``judge_prompt`` / ``judge_threshold`` it is written with."""
    raw = case.get("judge")
    if isinstance(raw, Mapping):
        return dict(raw)
    return {k: case[key] for k, key in _JUDGE_KEYS.items() if key in case}


def _yaml_text(value: Any) -> str:
    """``value`` as YAML: as written in block style, else (``{...}``, JSON) block style."""
    out = io.StringIO()
    yaml = _yaml()
    if getattr(value, "fa", None) is None or value.fa.flow_style():
        value, yaml.default_flow_style = _plain(value), False
    yaml.dump(value, out)
    return textwrap.dedent(out.getvalue())


def _is_text_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str | int | float) for v in value)


def _revive_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    return ", ".join(str(v) for v in value) if isinstance(value, list) else value


def form_values(case: Mapping[str, Any]) -> dict[str, str]:
    """The editor's form values (:data:`FIELDS`) for a case mapping as written (under
    whichever key of :data:`ALIASES` it uses); ``input_as`` / ``turns_as`` are ``yaml`` when
    that field is shown as YAML (:data:`AS_YAML`); ``other_keys`` names the case's keys the
    form does not show (kept as written)."""
    judge = _judge(case)
    values: dict[str, Any] = {
        "id": case.get("id"),
        "judge_rubric": judge.get("rubric"),
        "judge_threshold": judge.get("threshold"),
        "max_latency_ms": case.get("max_latency_ms"),
        "tier": case.get("tier"),
        "tags": ", ".join(str(t) for t in case.get("tags") or ()),
        "category": case.get("category") or (case.get("metadata") or {}).get("category"),
        "revive": _revive_text(case.get(key_of(case, "revive"))),
        "tool_calls_match": case.get("tool_calls_match"),
        "tool_calls_scope": case.get("tool_calls_scope"),
        "arguments_match": _arguments_text(case.get("arguments_match")),
    }
    for name, kind, _ in FIELDS:
        if kind in ("lines", "textarea") and name not in values:
            values[name] = _lines(case.get(key_of(case, name)))
    for name in AS_YAML:
        value = case.get(key_of(case, name))
        plain = value is None or isinstance(value, str) or _is_text_list(value)
        if not plain:
            values[name], values[f"{name}_as"] = _yaml_text(value), "yaml"
    for name in ("expected_tool_calls", "user"):
        if value := case.get(name):
            values[name] = _yaml_text(value)
    values["other_keys"] = ", ".join(str(k) for k in case if str(k) not in _SHOWN_KEYS)
    return {k: "" if v is None else str(v) for k, v in values.items()}


def _arguments_text(value: Any) -> str | None:
    """``arguments_match`` in its form field: a mode, or the argument names comma-separated."""
    return ", ".join(str(v) for v in value) if isinstance(value, list) else value


def _arguments(text: str) -> Any:
    """A mode as it is; anything else a list of argument names (comma- or space-separated)."""
    if text in ARGUMENT_MODES:
        return text
    return [p for p in re.split(r"[,\s]+", text) if p]


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text  # load_dataset says why it is not a number


def _revive(text: str) -> Any:
    """``true``/``false``, or turn numbers (``2, 3``); anything else as written, for
    ``load_dataset`` to say why not."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    parts = [p for p in re.split(r"[,\s]+", text) if p]
    return [int(p) for p in parts] if all(p.isdigit() for p in parts) else text


class _Unparsable:
    """A form value that could not be parsed: its field keeps the value it had."""

    def __init__(self, message: str):
        self.message = message


def _parsed(name: str, kind: str, text: str) -> Any:
    if kind == "yaml":
        text = textwrap.dedent(text.replace("\r\n", "\n")).strip("\n")
    elif kind == "textarea":
        text = text.replace("\r\n", "\n").strip("\n")
    else:
        text = text.strip()
    if not text.strip():
        return None
    if kind == "lines":
        return [line.strip() for line in text.splitlines() if line.strip()]
    if kind == "csv":
        return [t.strip() for t in text.split(",") if t.strip()]
    if kind == "number":
        return _number(text)
    if kind == "revive":
        return _revive(text)
    if kind == "arguments":
        return _arguments(text)
    if kind == "yaml":
        try:
            return _yaml().load(text)
        except YAMLError as exc:
            return _Unparsable(f"field '{name}': not valid YAML: {' '.join(str(exc).split())}")
    return text


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _set(case: Any, key: str, value: Any) -> None:
    """Set, replace or (``None``) remove a key; an unchanged value keeps its written form,
    a changed list keeps the flow style (``[a, b]``) of the one it replaces."""
    old = case.get(key)
    if value is None:
        case.pop(key, None)
        return
    if old is not None and _plain(old) == _plain(value):
        return
    if isinstance(old, CommentedSeq) and old.fa.flow_style() and isinstance(value, list):
        value = CommentedSeq(value)
        value.fa.set_flow_style()
    case[key] = value


def _form_parsed(form: Mapping[str, str]) -> dict[str, Any]:
    """Each form field's value; an :data:`AS_YAML` field sent as YAML parsed as YAML (a value
    that is not valid YAML is an :class:`_Unparsable`)."""
    values = {}
    for name, kind, _ in FIELDS:
        shown = "yaml" if name in AS_YAML and form.get(f"{name}_as") == "yaml" else kind
        values[name] = _parsed(name, shown, form.get(name, ""))
    return values


def apply_form(case: Any, form: Mapping[str, str]) -> list[str]:
    """Write the form's values into a case mapping in place, each under the key the case
    writes it with (:data:`ALIASES`; the judge in ``judge`` or ``judge_prompt`` /
    ``judge_threshold``): an empty field removes its key; keys the form does not cover stay
    as they are. Returns the problems of values that cannot be parsed (expected tool calls,
    input or turns sent as YAML that is not valid YAML, one message each, naming the field);
    such a field keeps its value and every other field is still written, so :func:`validate`
    reports the rest of the form's problems in the same save."""
    values = _form_parsed(form)
    problems = [v.message for v in values.values() if isinstance(v, _Unparsable)]
    values = {
        k: (case.get(key_of(case, k)) if isinstance(v, _Unparsable) else v)
        for k, v in values.items()
    }
    for name, _kind, _ in FIELDS:
        if not name.startswith("judge_") and name not in ("category", "revive"):
            _set(case, key_of(case, name), values[name])
    _set_revive(case, values["revive"])
    _set_judge(case, values["judge_rubric"], values["judge_threshold"])
    _set_category(case, values["category"])
    return problems


def _set_revive(case: Any, value: Any) -> None:
    """``test_agent_revival`` holds only true/false; turn numbers go to ``revive``."""
    key = key_of(case, "revive")
    if key != "revive" and value is not None and not isinstance(value, bool):
        position = list(case).index(key)
        case.pop(key)
        if hasattr(case, "insert"):  # in its place, a YAML case
            case.insert(position, "revive", value)
        key = "revive"
    _set(case, key, value)


def _set_judge(case: Any, rubric: Any, threshold: Any) -> None:
    if "judge" not in case and any(key in case for key in _JUDGE_KEYS.values()):
        _set(case, "judge_prompt", rubric)
        _set(case, "judge_threshold", threshold)
        return
    judge = dict(case.get("judge") or {})
    for key, value in (("rubric", rubric), ("threshold", threshold)):
        if value is None:
            judge.pop(key, None)
        else:
            judge[key] = value
    _set(case, "judge", judge or None)


def _set_category(case: Any, category: Any) -> None:
    if "category" in Case.model_fields:
        _set(case, "category", category)
        return
    metadata = case.get("metadata")
    if category is not None:
        if metadata is None:
            case["metadata"] = metadata = {}
        metadata["category"] = category
    elif isinstance(metadata, dict):
        metadata.pop("category", None)
        if not metadata:
            case.pop("metadata")


def _form_field(message: str) -> str | None:
    if "'input' or 'turns'" in message:  # the case's own check, "field '(case)': ..."
        return "input"
    match = _FIELD_IN_ERROR.search(message)
    if match is None:
        return None
    path = match.group(1)
    head = path.split(".")[0]
    if head in ("judge", "judge_prompt", "judge_threshold"):
        return "judge_threshold" if path.endswith("threshold") else "judge_rubric"
    head = next((name for name, keys in ALIASES.items() if head in keys), head)
    if head == "metadata" or path.startswith("category"):
        return "category"
    return head if any(head == name for name, _, _ in FIELDS) else None


def validate(text: str, suffix: str, shown_as: str, form_problems: Sequence[str] = ()) -> Dataset:
    """Validate a dataset text with :func:`~tracegrade.dataset.load_dataset_text` (as a file
    named like the dataset would be); messages name ``shown_as``. ``form_problems`` (from
    :func:`apply_form`) are reported with its problems.

    Raises:
        CaseError: every problem: the form's, then the lines ``load_dataset`` gives, each
            with the form field it is about.
    """
    try:
        dataset = load_dataset_text(text, suffix, shown_as)
    except DatasetError as exc:
        message = "\n".join([*form_problems, str(exc)])
        raise CaseError(message, _form_field(message)) from exc
    if form_problems:
        message = "\n".join(form_problems)
        raise CaseError(message, _form_field(message))
    return dataset


def write_atomically(path: Path, text: str) -> None:
    """Replace a dataset file's text atomically, through a sibling temporary file given the
    file's own permission bits (a save never changes who may read it); a new file gets the
    default permissions."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(tmp, 0o644 if mode is None else mode)
    os.replace(tmp, path)
