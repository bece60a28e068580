"""A reviewed conversation promoted to a golden case: the expectations ``dataset build``
derives (:func:`tracegrade.curate.derive.derive_case`: the input, or ``turns`` for a multi-turn
conversation; expected tools; answer values a tool result holds; budgets; where it came from),
then the reviewer's edits (:class:`CaseEdits`):

- **tool calls**: for each call seen (by its index in the conversation), ``none`` (not
  expected), ``name`` (the tool is expected, any arguments) or ``arguments`` (this call, with
  exactly these arguments, is required); the derived default is ``name`` for a performed call
  and ``none`` for a failed one (:func:`tool_choices`);
- **answer facts** (``must_contain``) and **forbidden claims** (``must_not_contain``);
- the **corrected answer** (``reference``: what the agent should have said, evidence for the
  judge and for value grounding), the human **label** (``pass`` / ``fail``: what
  ``judge-check`` compares with), the case id and tags.

``metadata.review`` becomes ``approved`` with the reviewer and the time. The case is appended
to a dataset's text by :func:`append_case`, keeping the file's comments and key order
(:mod:`tracegrade.dataset.editing`), and validated by ``load_dataset`` before anything is
written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tracegrade.curate.derive import ConversationTraces, DeriveOptions, derive_case, grounded_values
from tracegrade.dataset.editing import CaseError, Document, validate
from tracegrade.trace import AgentTrace

REVIEW_DERIVE = DeriveOptions(tags=("from-review",))
"""How a promoted case is derived before the edits: ``dataset build``'s defaults, tagged."""
Choice = Literal["none", "name", "arguments"]
CHOICES: tuple[Choice, ...] = ("none", "name", "arguments")


@dataclass(frozen=True)
class CaseEdits:
    """The reviewer's edits to a derived case (module docstring); None keeps the derived
    value. ``tool_calls`` maps a call's index (in the conversation's tool calls) to a
    :data:`Choice`; indexes not given keep their default."""

    case_id: str | None = None
    tool_calls: Mapping[int, Choice] = field(default_factory=dict)
    must_contain: Sequence[str] | None = None
    must_not_contain: Sequence[str] = ()
    reference: str | None = None
    label: Literal["pass", "fail"] | None = None
    tags: Sequence[str] | None = None


def tool_choices(trace: AgentTrace) -> list[dict[str, Any]]:
    """The calls seen in a conversation, for the reviewer to pick from: index, name,
    arguments, result, error and the default :data:`Choice`."""
    return [
        {
            "index": i,
            "name": call.name,
            "arguments": call.arguments,
            "result": call.result,
            "error": call.error,
            "default": "name" if call.performed else "none",
        }
        for i, call in enumerate(trace.tool_calls)
    ]


def suggested_facts(trace: AgentTrace) -> list[str]:
    """The answer facts a case would derive (values of the answer a tool result holds)."""
    return grounded_values(trace)


def _check_indexes(choices: Sequence[Mapping[str, Any]], picks: Mapping[int, Choice]) -> None:
    """A pick for a call the conversation does not have is an error naming the valid range."""
    wrong = sorted(i for i in picks if not 0 <= i < len(choices))
    if not wrong:
        return
    seen = ", ".join(f"{c['index']}={c['name']}" for c in choices[:8])
    seen += f" and {len(choices) - 8} more" if len(choices) > 8 else ""
    valid = (
        f"the conversation has {len(choices)} tool call(s), INDEX 0-{len(choices) - 1} ({seen})"
        if choices
        else "the conversation has no tool call"
    )
    raise CaseError(f"tool call {', '.join(map(str, wrong))} out of range: {valid}", None)


def _tool_expectations(trace: AgentTrace, picks: Mapping[int, Choice]) -> dict[str, Any]:
    """``expected_tools`` and ``expected_tool_calls`` from the calls seen and the picks.

    Raises:
        CaseError: a pick's index is out of range (naming the valid range) or its choice
            unknown.
    """
    names: list[str] = []
    calls: list[dict[str, Any]] = []
    choices = tool_choices(trace)
    _check_indexes(choices, picks)
    for choice in choices:
        picked = picks.get(choice["index"], choice["default"])
        if picked not in CHOICES:
            raise CaseError(
                f"tool call {choice['index']}: choose one of {', '.join(CHOICES)}", None
            )
        if picked == "arguments" and isinstance(choice["arguments"], dict):
            calls.append(
                {"name": choice["name"], "arguments": choice["arguments"], "required": True}
            )
        elif picked != "none" and choice["name"] not in names:
            names.append(choice["name"])
    names = [n for n in names if n not in {c["name"] for c in calls}]
    return {"expected_tools": names, "expected_tool_calls": calls}


def promoted_case(
    conversation: ConversationTraces,
    edits: CaseEdits,
    reviewer: str,
    *,
    options: DeriveOptions = REVIEW_DERIVE,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The golden case of a reviewed conversation (see the module docstring).

    Raises:
        CaseError: the conversation has no user input, or a tool choice is unknown or out
            of range (the message names the valid range).
    """
    case = derive_case(conversation, options)
    if case is None:
        raise CaseError("the conversation has no user input to make a case of", None)
    for key, value in _tool_expectations(conversation.trace, edits.tool_calls).items():
        case.pop(key, None)
        if value:
            case[key] = value
    _replace(case, "must_contain", edits.must_contain)
    _replace(case, "must_not_contain", edits.must_not_contain or None)
    if case.get("must_contain") and len(conversation.trace.user_inputs) > 1:
        case["contain_scope"] = "replies"
    else:
        case.pop("contain_scope", None)
    _replace(case, "reference", edits.reference or None)
    _replace(case, "label", edits.label)
    _replace(case, "tags", list(edits.tags) if edits.tags is not None else None)
    if edits.case_id:
        case["id"] = edits.case_id
    when = (now or dt.datetime.now(dt.UTC)).isoformat().replace("+00:00", "Z")
    metadata = case.pop("metadata")
    metadata.update(review="approved", reviewed_by=reviewer, reviewed_at=when)
    case["metadata"] = metadata
    return case


def _replace(case: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` to ``value`` (a list without blanks); an empty value removes it; None
    keeps what was derived."""
    if value is None:
        return
    if isinstance(value, list | tuple):
        value = [str(v).strip() for v in value if str(v).strip()]
    if value in ("", []):
        case.pop(key, None)
    else:
        case[key] = value


def append_case(text: str, suffix: str, case: Mapping[str, Any], shown_as: str) -> str:
    """The dataset text with ``case`` appended (comments and key order kept), validated by
    ``load_dataset``; ``shown_as`` names the dataset in errors.

    Raises:
        CaseError: the text does not parse, the dataset has the case id already, or the result
            does not load (the message names the field).
    """
    document = Document.parse(text, suffix)
    taken = {str(c.get("id")) for c in document.cases if isinstance(c, Mapping)}
    if str(case.get("id")) in taken:
        raise CaseError(
            f"{shown_as} has a case {case.get('id')!r} already: choose another id", "id"
        )
    document.cases.append(dict(case))
    new_text = document.dump()
    validate(new_text, suffix, shown_as)
    return new_text
