"""Golden datasets: cases with behavioural expectations, validated by pydantic.

A dataset file is YAML, JSON or JSONL: either a list of cases (the shape our design
documents use, ``{"input", "expected_tools", "expected_fields", "criteria", "tier"}``, loads
unchanged) or an object ``{name, description, threshold, weights, field_aliases, cases}``.
Case fields are documented on :class:`Case`; the case shapes of the other design documents
(the case editor's ``prompt``/``judge_prompt``, the regression alerts' ``EvalCase``) are mapped
onto them (:mod:`tracegrade.dataset.shapes`). Unknown keys are errors with the closest field
name suggested; every error of the file is reported at once, each naming the file, the line
of the field itself (YAML/JSON; the case's line in JSONL), the case and the field
(:mod:`tracegrade.dataset.located`).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tracegrade._util.bounded import load_json, load_yaml
from tracegrade.dataset.located import Located, locate, messages, validation_problems
from tracegrade.dataset.predicates import Predicate, PredicateError, parse_predicate
from tracegrade.dataset.shapes import CASE_KEYS, to_case_fields
from tracegrade.dataset.simulated import SimulatedUser
from tracegrade.dataset.trajectories import (
    ORDER_TO_MATCH,
    ArgumentsMatch,
    ToolCallsMatch,
    ToolCallsScope,
    argument_rule,
)
from tracegrade.errors import DatasetError
from tracegrade.otlp.files import trace_file_kind

Tier = Literal["smoke", "full"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpectedToolCall(_Strict):
    """A tool call the agent should make, with predicates on its arguments
    (see :mod:`tracegrade.dataset.predicates`)."""

    name: str
    arguments: dict[str, Any] = {}
    """Argument name -> a plain value (must equal it) or an object of predicate operators
    (``{regex: ...}``, ``{one_of: [...]}``, ``{"<=": 5}``, ...)."""
    allow_extra_arguments: bool = True
    """Whether the call may pass arguments not named in ``arguments``."""
    required: bool = False
    """When true, the case fails (hard) unless some call satisfies every predicate."""
    arguments_match: ArgumentsMatch | None = None
    """How the arguments are compared: ``superset`` (the default: every stated argument as
    stated, others allowed), ``exact`` (and no other), ``subset`` (stated ones may be left
    out, no other passed), ``ignore``, or a list of the argument names compared (see
    :mod:`tracegrade.dataset.trajectories`); else the case's ``arguments_match``."""
    _predicates: dict[str, Predicate] = PrivateAttr(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _valid_predicates(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name, spec in value.items():
            try:
                parse_predicate(spec)
            except PredicateError as exc:
                raise ValueError(f"argument {name!r}: {exc}") from exc
        return value

    @field_validator("arguments_match")
    @classmethod
    def _named_fields(cls, value: ArgumentsMatch | None) -> ArgumentsMatch | None:
        if isinstance(value, list) and not value:
            raise ValueError("a list of argument names needs at least one name")
        return value

    @model_validator(mode="after")
    def _fields_stated(self) -> ExpectedToolCall:
        mode = self.arguments_match
        if isinstance(mode, list) and (unstated := [n for n in mode if n not in self.arguments]):
            raise ValueError(
                f"arguments_match names {unstated}, which 'arguments' does not state: give "
                "each compared argument's expected value"
            )
        extra = "allow_extra_arguments" in self.model_fields_set
        allows = mode not in ("exact", "subset")
        if extra and mode is not None and allows != self.allow_extra_arguments:
            raise ValueError(
                f"allow_extra_arguments: {str(self.allow_extra_arguments).lower()} contradicts "
                f"arguments_match: {mode}; give one of them"
            )
        return self

    def model_post_init(self, context: Any) -> None:
        self._predicates = {name: parse_predicate(spec) for name, spec in self.arguments.items()}

    @property
    def predicates(self) -> dict[str, Predicate]:
        """The parsed predicate of each argument."""
        return self._predicates

    def rule(self, default: ArgumentsMatch | None = None) -> tuple[dict[str, Predicate], bool]:
        """The predicates checked and whether other arguments are allowed, under this call's
        ``arguments_match`` (else ``default``, the case's; else ``allow_extra_arguments``)."""
        mode = self.arguments_match or ("exact" if not self.allow_extra_arguments else default)
        return argument_rule(self._predicates, mode or "superset", self.allow_extra_arguments)


class Judge(_Strict):
    """An LLM-judge rubric (scored by the judge scorer, a later addition)."""

    rubric: str
    """What a good answer does, in words; or ``faithfulness``, the built-in rubric (every claim
    supported by a tool result or retrieved document)."""
    threshold: float = Field(0.7, ge=0, le=1)
    """The judge's score below which the case fails (bands: 1.0 meets the rubric, 0.5
    partially, 0.0 not at all)."""
    model: str | None = None
    """The judge model for this rubric (wins over ``--judge-model``)."""


class ReferenceDocument(_Strict):
    """One document of a case's reference context: its text and, optionally, an id."""

    content: str
    id: str | None = None


class Budget(_Strict):
    """Limits on one agent's subtree or one tool: ``agent: NAME`` or ``tool: NAME``."""

    agent: str | None = None
    tool: str | None = None
    max_latency_ms: float | None = Field(None, gt=0)
    max_cost_usd: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    max_calls: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_scope(self) -> Budget:
        if (self.agent is None) == (self.tool is None):
            raise ValueError("a budget names exactly one of 'agent' or 'tool'")
        return self


class Case(_Strict):
    """One golden case. Only ``input`` (or ``turns``) is required."""

    id: str | None = None
    """Pairs the case across runs (compare, history); default ``<file stem>:<n>``."""
    name: str | None = None
    """A display name (the case editor's and regression alerts' ``name``)."""
    category: str | None = None
    """A grouping for reports (the regression alerts' ``category``); on every result."""
    input: str | None = None
    """The user's (first) message; matches a trace whose first user input equals it."""
    turns: list[str] | None = None
    """Several user messages, for multi-turn cases; ``input`` defaults to the first."""
    user: SimulatedUser | None = None
    """A simulated user who talks to the agent in ``tracegrade run`` after ``input`` or
    ``turns`` (or from the first message, which the LLM simulator then writes): its goal,
    persona, facts, stop condition, ``max_turns``, and for a scripted user its replies
    (:mod:`tracegrade.dataset.simulated`)."""
    revive: bool | list[int] = False
    """Agent revival in ``tracegrade run`` (the case editor's ``test_agent_revival``): before
    a revived turn the runner ends the agent's session and starts it again with the same
    conversation id (a fresh process, a callable rebuilt by its factory, a restarted service),
    and sends it only the messages from that turn on. ``true``: before every turn after the
    first; a list: the turns (numbered from 1, each at least 2) revived before; with a
    simulated user, turns up to its ``max_turns``. A revived turn whose first LLM call lost
    the earlier turns fails ``context_preserved``."""
    expected_tools: list[str] = []
    """Tool names to call, as a multiset (two entries need two calls)."""
    expected_tool_calls: list[ExpectedToolCall] = []
    """Calls with predicates on their arguments (scored by ``tool_arguments``); a ``required``
    one not made is a hard failure."""
    forbidden_tools: list[str] = []
    """Tools the agent must not call: any attempt is a hard failure."""
    strict_tools: list[str] = []
    """Tools whose every performed call must match one of ``expected_tool_calls`` (all its
    predicates): an extra or different call of these tools is a hard failure."""
    order: Literal["any", "in_order", "exact"] = "any"
    """How ``expected_tools`` are ordered: any order; ``in_order`` (credit: the longest common
    subsequence over the expected count, calls between allowed); ``exact`` (the same over the
    longer sequence, so extra calls cost). ``tool_calls_match`` says the same in the other
    evaluators' words."""
    tool_calls_match: ToolCallsMatch | None = None
    """How the tool calls are matched against the expected ones: ``exact``, ``in_order``,
    ``any_order``, ``superset`` (the default, ``order: any``) or ``subset`` (no tool outside
    the expected list may be called); see :mod:`tracegrade.dataset.trajectories`."""
    arguments_match: ArgumentsMatch | None = None
    """The default ``arguments_match`` of the case's ``expected_tool_calls``."""
    tool_calls_scope: ToolCallsScope = "all"
    """Which tool calls are matched: ``all`` (those of nested sub-agents too, each with its
    depth) or ``top_level`` (only the outermost acting agent's own calls)."""
    expected_fields: list[str] = []
    """Fields the answer must name or state by value, matched through the alias lists of
    ``config/aliases.yaml`` (and ``field_aliases``) on word boundaries."""
    criteria: dict[str, Any] = {}
    """Free-form flags from the design documents; ``grounded`` and ``tool_called`` are used."""
    must_contain: list[str] = []
    """Phrases the answer should contain (partial credit: the fraction found)."""
    must_not_contain: list[str] = []
    """Phrases the answer must not contain: a hit is a hard failure (hallucination)."""
    contain_scope: Literal["final", "replies", "any_response"] = "final"
    """Where ``must_contain`` looks: the final answer; every reply (assistant turn that
    requests no tool); or any assistant text, including text sent alongside tool calls."""
    max_latency_ms: float | None = Field(None, gt=0)
    """Budget on the whole trace's duration, ms (exceeded: a hard failure)."""
    max_cost_usd: float | None = Field(None, ge=0)
    """Budget on the trace's cost, USD (from token counts and the pricing table)."""
    max_tool_calls: int | None = Field(None, ge=0)
    """Budget on the number of tool calls."""
    max_tokens: int | None = Field(None, ge=0)
    """Budget on input plus output tokens."""
    budgets: list[Budget] = []
    """Budgets on one agent's subtree or one tool."""
    judge: Judge | None = None
    """An LLM-judge rubric for this case (else the dataset's ``judge``)."""
    reference: str | list[str | ReferenceDocument] | None = None
    """The reference context the answer must keep to (the evaluation design's ``reference``):
    text, or a list of documents (text or ``{content, id}``). Evidence for value grounding,
    the production rules, ``faithfulness`` and the judge, like retrieved documents."""
    label: Literal["pass", "fail"] | None = None
    """A human verdict on this case, for judge calibration (``tracegrade judge-check``)."""
    clarifications: dict[str, str] = {}
    """Scripted answers to clarifying questions in ``tracegrade run``: regular expression
    (searched case-insensitively in the agent's reply) -> the user's reply, first match wins.
    Not with a simulated ``user``, which answers the agent itself."""
    max_followups: int = Field(2, ge=0)
    """At most this many clarification follow-ups per case in ``tracegrade run``."""
    tags: list[str] = []
    """Free labels; the report breaks the run down by tag, ``run --tags`` selects by them."""
    weight: float = Field(1.0, gt=0)
    """The case's weight in the run's mean score."""
    tier: Tier = "full"
    """``smoke`` cases run with ``--smoke``; the full tier (``--full``, the default) runs every
    case."""
    trace_id: str | list[str] | None = None
    """Explicit mapping to the trace(s) this case scores."""
    metadata: dict[str, Any] = {}
    """Free data kept with every result of the case (``dataset build`` records the traces the
    case came from, ``source_traces``)."""

    @model_validator(mode="after")
    def _input_or_turns(self) -> Case:
        if self.input is None and not self.turns and self.user is None:
            raise ValueError("a case needs 'input' or 'turns' (or a simulated 'user')")
        if self.input is None and self.turns:
            self.input = self.turns[0]
        return self

    @field_validator("user")
    @classmethod
    def _room_for_turns(cls, value: SimulatedUser | None, info: ValidationInfo) -> Any:
        scripted = len(info.data.get("turns") or ()) or (1 if info.data.get("input") else 0)
        if value is not None and value.max_turns < scripted:
            raise ValueError(
                f"max_turns {value.max_turns} is below the case's {scripted} scripted "
                "turn(s): max_turns counts every user message of the conversation"
            )
        return value

    @field_validator("clarifications")
    @classmethod
    def _no_clarifications_with_a_user(cls, value: dict[str, str], info: ValidationInfo) -> Any:
        if value and info.data.get("user") is not None:
            raise ValueError(
                "a simulated user answers the agent's questions itself: give scripted answers "
                "as user.replies, not clarifications"
            )
        return value

    @field_validator("arguments_match")
    @classmethod
    def _named_arguments(cls, value: ArgumentsMatch | None) -> ArgumentsMatch | None:
        if isinstance(value, list) and not value:
            raise ValueError("a list of argument names needs at least one name")
        return value

    @model_validator(mode="after")
    def _one_order(self) -> Case:
        mapped = ORDER_TO_MATCH[self.order]
        if "order" in self.model_fields_set and self.tool_calls_match not in (None, mapped):
            raise ValueError(
                f"order: {self.order} contradicts tool_calls_match: {self.tool_calls_match} "
                f"(order: {self.order} is tool_calls_match: {mapped}); give one of them"
            )
        return self

    @property
    def trajectory_match(self) -> ToolCallsMatch:
        """``tool_calls_match``, else ``order`` in its words (``any`` is ``superset``)."""
        return self.tool_calls_match or ORDER_TO_MATCH[self.order]

    @field_validator("revive", mode="before")
    @classmethod
    def _revive_shape(cls, value: Any) -> Any:
        listed = isinstance(value, list) and all(
            isinstance(n, int) and not isinstance(n, bool) for n in value
        )
        if not (isinstance(value, bool) or listed):
            raise ValueError(f"expected true, false or a list of turn numbers, got {value!r}")
        return value

    @model_validator(mode="after")
    def _revivable(self) -> Case:
        if self.revive:
            count = self.turn_count
            if count < 2:
                raise ValueError(
                    "'revive' needs 'turns' with at least two user messages (or a simulated "
                    "user with max_turns of 2 or more)"
                )
            wrong = [n for n in self.revived_turns if not 2 <= n <= count]
            if wrong:
                raise ValueError(
                    f"'revive' lists turn(s) {wrong}: give true, or turn numbers from 2 "
                    f"to {count} (the agent is revived before each)"
                )
        return self

    @property
    def turn_count(self) -> int:
        """The most user messages the conversation holds: the scripted turns, or a simulated
        user's ``max_turns``."""
        scripted = len(self.turns or ())
        return max(scripted, self.user.max_turns) if self.user is not None else scripted

    @property
    def revived_turns(self) -> tuple[int, ...]:
        """The turns (numbered from 1) before which the agent is revived, in order."""
        if self.revive is True:
            return tuple(range(2, self.turn_count + 1))
        return tuple(sorted(set(self.revive or ())))

    @property
    def all_expected_tools(self) -> list[str]:
        """``expected_tools`` plus the names of ``expected_tool_calls`` not already listed."""
        names = list(self.expected_tools)
        remaining = list(names)
        for call in self.expected_tool_calls:
            if call.name in remaining:
                remaining.remove(call.name)
            else:
                names.append(call.name)
        return names

    @property
    def reference_documents(self) -> list[ReferenceDocument]:
        """``reference`` as documents (a text is one document without an id)."""
        items = [self.reference] if isinstance(self.reference, str) else self.reference or []
        return [ReferenceDocument(content=i) if isinstance(i, str) else i for i in items]

    @property
    def trace_ids(self) -> list[str]:
        """The explicitly mapped trace ids (lowercase hex)."""
        ids = [self.trace_id] if isinstance(self.trace_id, str) else list(self.trace_id or [])
        return [i.lower() for i in ids]


class Dataset(_Strict):
    """A golden dataset: cases plus optional settings that override the config."""

    name: str = "dataset"
    """Names the dataset in stored runs (``runs --dataset``, ``history``, baselines)."""
    description: str | None = None
    threshold: float | None = Field(None, ge=0, le=1)
    """The pass score per case (default: the config's, 0.7)."""
    weights: dict[str, float] | None = None
    """Axis or scorer -> weight in the overall score, replacing the config's weights."""
    field_aliases: dict[str, list[str]] | None = None
    """Field -> the words that name it, added to ``config/aliases.yaml``'s."""
    judge: Judge | None = None
    """The default judge rubric and threshold for cases that set none."""
    cases: list[Case]
    source: str | None = None
    digest: str | None = None
    """sha256 of the file's bytes: identifies the dataset version in stored runs."""

    def tier(self, tier: Tier | None) -> list[Case]:
        """Cases of a tier (``smoke`` ⊂ ``full``: the full tier runs every case)."""
        return [c for c in self.cases if tier != "smoke" or c.tier == "smoke"]


# --- loading ------------------------------------------------------------------------------------


def _parse(path: Path, text: str) -> tuple[Any, list[int] | None]:
    """The file's data, and for JSONL the line of each case."""
    if path.suffix == ".jsonl":
        cases, lines, errors = [], [], []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    cases.append(load_json(line))
                except json.JSONDecodeError as exc:
                    errors.append(f"{path}:{number}: invalid JSON: {exc}")
                lines.append(number)
        if errors:
            raise DatasetError("\n".join(errors))
        return cases, lines
    try:
        data = load_json(text) if path.suffix == ".json" else load_yaml(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise DatasetError(
            f"{path}: invalid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}"
        ) from exc
    return data, None


def _map_shapes(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str, bool]]:
    """Map each case of a design-document shape onto the case fields, in place (see
    :mod:`tracegrade.dataset.shapes`); the problems found, as paths from the file's top."""
    problems: list[tuple[tuple[str | int, ...], str, bool]] = []
    cases = data.get("cases")
    if not isinstance(cases, list):
        return problems
    for index, raw in enumerate(cases):
        if isinstance(raw, dict):
            cases[index], found = to_case_fields(raw)
            problems += [(("cases", index, *where), why, False) for where, why in found]
    return problems


def load_dataset_text(text: str, suffix: str, shown_as: str) -> Dataset:
    """Load and validate a golden dataset held as text (a stored dataset, an editor's form)
    exactly as :func:`load_dataset` loads a file: ``suffix`` (``.yaml``, ``.json``,
    ``.jsonl``) says how to parse it, and the dataset is named after ``shown_as``'s stem.

    Raises:
        DatasetError: as :func:`load_dataset`, every message naming ``shown_as`` where it
            would name the file.
    """
    stem = Path(shown_as).stem or "dataset"
    with tempfile.TemporaryDirectory(prefix="tracegrade-dataset-") as folder:
        path = Path(folder) / f"{stem}{suffix}"
        path.write_text(text, encoding="utf-8")
        try:
            return load_dataset(path)
        except DatasetError as exc:
            raise DatasetError(str(exc).replace(str(path), shown_as)) from None


def load_dataset(path: str | Path) -> Dataset:
    """Load and validate a golden dataset (see the module docstring).

    Raises:
        DatasetError: unreadable file, a trace file (one line saying to give it as the
            traces), invalid YAML/JSON, bad cases (every problem of the
            file, one line each: file, line of the field, case, field, and for an unknown
            field the closest known one), or duplicate case ids.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read dataset: {exc}") from exc
    if (kind := trace_file_kind(raw)) is not None:
        raise DatasetError(
            f"{path}: {kind}, not a golden dataset: give it as the traces (tracegrade score "
            f"{path} --dataset DATASET); `tracegrade dataset build {path}` makes a dataset of it"
        )
    text = raw.decode("utf-8", "replace")
    data, case_lines = _parse(path, text)
    if isinstance(data, list):
        data = {"name": path.stem, "cases": data}
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: a dataset is a list of cases or an object with 'cases'")
    data = {
        "name": path.stem,
        **data,
        "source": str(path),
        "digest": hashlib.sha256(raw).hexdigest(),
    }
    problems = _map_shapes(data)
    dataset = None
    try:
        dataset = Dataset.model_validate(data)
    except ValidationError as exc:
        problems += validation_problems(exc, Dataset, CASE_KEYS)
        problems += _hidden_problems(data.get("cases"), problems)
    if problems:
        found = messages(str(path), locate(text, case_lines), data, problems)
        raise DatasetError("\n".join(found))
    assert dataset is not None
    _assign_ids(dataset, path, locate(text, case_lines))
    return dataset


_Problem = tuple[tuple[str | int, ...], str, bool]


def _hidden_problems(cases: Any, found: list[_Problem]) -> list[_Problem]:
    """What pydantic does not say while a field of a case is invalid: a case without 'input'
    or 'turns' (its model check runs only on valid fields) and duplicate explicit ids
    (checked on a valid dataset), so every problem of the file is reported at once."""
    if not isinstance(cases, list):
        return []
    said = {path[:2] for path, message, _ in found if "'input' or 'turns'" in message}
    problems: list[_Problem] = []
    seen: dict[Any, int] = {}
    for index, case in enumerate(cases):
        if not isinstance(case, dict):
            continue
        empty = not case.get("input") and not case.get("turns") and not case.get("user")
        if empty and ("cases", index) not in said:
            problems.append(
                (("cases", index), "a case needs 'input' or 'turns' (or a simulated 'user')", False)
            )
        case_id = case.get("id")
        if isinstance(case_id, str) and case_id in seen:
            why = f"duplicate id {case_id!r} (first used by case {seen[case_id] + 1})"
            problems.append((("cases", index, "id"), why, False))
        seen.setdefault(case_id, index)
    return problems


def _assign_ids(dataset: Dataset, path: Path, where: Located) -> None:
    """Default ids (``NAME:N``); every duplicate id is an error naming both cases."""
    seen: dict[str, int] = {}
    errors = []
    for index, case in enumerate(dataset.cases):
        if case.id is None:
            case.id = f"{dataset.name}:{index + 1}"
        if case.id in seen:
            line = where.line(("cases", index, "id"))
            errors.append(
                f"{path}{f':{line}' if line else ''}: case {index + 1}: field 'id': duplicate id "
                f"{case.id!r} (first used by case {seen[case.id] + 1})"
            )
        seen.setdefault(case.id, index)
    if errors:
        raise DatasetError("\n".join(errors))
