"""The evidence a judge sees: what the trace says the user asked, what the tools returned,
what the retrievers returned, the case's reference, and what the agent answered.

From an :class:`~tracegrade.trace.AgentTrace`: the user input(s), every tool call in
execution order with its arguments and its result (or error), every retrieval with its query
and its documents (id, score, content), the case's ``reference`` documents, and the final
answer. This is what lets the judge check faithfulness ("is every claim supported by a tool
result or a retrieved document?") and not only style. A trace without retrievals and a case
without a reference give exactly the evidence they gave before retrievals were read (the
judge's cached verdicts stay valid).

The text is held to a token budget. Tokens are estimated at :data:`CHARS_PER_TOKEN`
characters each (OpenAI's rule of thumb for English text; no tokenizer is needed to stay
under a budget with margin). When the trace does not fit, the longest parts are cut first
(user inputs keep up to a fifth of the budget, the final answer up to two fifths, tool
results share the rest fairly - with the retrieved and reference documents, when there are
any: the two sections split it fairly, and documents share theirs fairly - and when even the
call headers do not fit, calls from the middle of the run are dropped), every cut is marked
where it happens, and a note at the top states what was truncated, so the judge never
mistakes a cut for a silent tool.

The evidence is one JSON document (:func:`fenced_json`): every piece of trace text is a JSON
string of its own, and ``<``, ``>`` and ``&`` inside strings are written as ``\\u003c``,
``\\u003e``, ``\\u0026``. So no trace text can close the ``<evidence>`` fence the prompt puts
around it (an answer holding ``</evidence>`` and a second rubric stays a string inside
``final_answer``), nor forge structure inside it (a tool result cannot add a tool call the
agent never made: it cannot leave its ``result`` string).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.dataset import Case
from tracegrade.trace import AgentTrace, ToolCall

CHARS_PER_TOKEN = 4
"""Characters per token used for estimates."""
ARGUMENTS_CHARS = 400
"""At most this many characters of one tool call's arguments."""
_USER_SHARE = 0.2
"""Share of the budget the user inputs may take."""
_ANSWER_SHARE = 0.4
"""Share of the budget the final answer (the thing judged) may take."""
_MIN_RESULT_CHARS = 80
_MARK_CHARS = 40
"""Room for one cut marker (``…[cut: 1,234 of 56,789 characters shown]``)."""
_LINE_CHARS = 48
"""Room for the JSON around one tool call (its keys, quotes and indentation)."""


def fenced_json(value: Any) -> str:
    """``value`` as JSON (one line: indentation would cost a fifth of a small budget) in which
    no string holds ``<``, ``>`` or ``&`` literally (escaped as ``\\u003c``, ``\\u003e``,
    ``\\u0026``): safe between literal tags in a prompt, since the JSON's own syntax (keys,
    brackets) never holds those characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


@dataclass(frozen=True)
class Evidence:
    """The rendered evidence: ``text``, a JSON document (:func:`fenced_json`) with
    ``truncated`` and ``note`` (when there is one), ``user_inputs``, ``tool_calls`` (``call``
    number, ``tool``, ``arguments``, ``error``, ``result``; an ``omitted`` entry where calls
    were dropped), ``retrieved_documents`` and ``reference_context`` (when there are any)
    and ``final_answer``. ``notes`` lists every truncation (empty when nothing was cut);
    ``estimated_tokens`` is the estimate of ``text``."""

    text: str
    truncated: bool
    notes: tuple[str, ...]
    estimated_tokens: int
    has_context: bool = False
    """True when the evidence holds retrieved documents or a reference context."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see :data:`CHARS_PER_TOKEN`)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _cut(text: str, limit: int, what: str | None, notes: list[str]) -> str:
    """``text`` within ``limit`` characters, the marker included; a cut is noted as ``what``."""
    if len(text) <= limit:
        return text
    keep = max(limit - _MARK_CHARS, 0)
    if what:
        notes.append(f"{what}: first {keep:,} of {len(text):,} characters")
    return f"{text[:keep]} …[cut: {keep:,} of {len(text):,} characters shown]"


def allocate(lengths: Sequence[int], total: int) -> list[int]:
    """Fair shares of ``total`` characters: short parts keep their length, long parts split
    what remains equally (max-min fairness)."""
    shares = [0] * len(lengths)
    remaining, left = max(total, 0), len(lengths)
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        shares[index] = min(lengths[index], remaining // left)
        remaining -= shares[index]
        left -= 1
    return shares


def _arguments(call: ToolCall) -> str:
    if not call.arguments_recorded:
        return "(arguments not recorded)"
    text = (
        call.arguments
        if isinstance(call.arguments, str)
        else json.dumps(call.arguments, ensure_ascii=False)
    )
    return (
        text if len(text) <= ARGUMENTS_CHARS else text[:ARGUMENTS_CHARS] + " …[arguments truncated]"
    )


def _outcome(call: ToolCall) -> str:
    if call.result is not None:
        return call.result
    return "" if call.error else "(no result recorded)"


def _headers(trace: AgentTrace) -> list[str]:
    """Each call's name, arguments and error as one string: their share of the budget."""
    lines = []
    for call in trace.tool_calls:
        line = f"{call.name} {_arguments(call)}"
        if call.error:
            line += f"\n    error: {call.error}"
        lines.append(line)
    return lines


def _kept_calls(
    headers: list[str], floors: list[int], budget: int, notes: list[str]
) -> list[int | None]:
    """Indices of the calls whose header and minimal result fit the budget (None marks the
    dropped middle)."""
    costs = [len(h) + _LINE_CHARS + f for h, f in zip(headers, floors, strict=True)]
    if sum(costs) <= budget:
        return list(range(len(headers)))
    head: list[int] = []
    tail: list[int] = []
    used, front, back = 0, 0, len(headers) - 1
    while front <= back:
        index = front if len(head) <= len(tail) else back
        if used + costs[index] > budget:
            break
        used += costs[index]
        if index == front:
            head.append(front)
            front += 1
        else:
            tail.insert(0, back)
            back -= 1
    dropped = len(headers) - len(head) - len(tail)
    notes.append(f"{dropped} of {len(headers)} tool calls omitted (calls {front + 1}-{back + 1})")
    return [*head, None, *tail]


def _tool_section(trace: AgentTrace, budget: int, notes: list[str]) -> list[dict[str, Any]]:
    if not trace.tool_calls:
        return []
    headers = _headers(trace)
    outcomes = [_outcome(call) for call in trace.tool_calls]
    floors = [min(len(o), _MIN_RESULT_CHARS) for o in outcomes]
    kept = _kept_calls(headers, floors, budget - 80, notes)
    indices = [i for i in kept if i is not None]
    room = budget - 80 - sum(len(headers[i]) + _LINE_CHARS for i in indices)
    shares = dict(zip(indices, allocate([len(outcomes[i]) for i in indices], room), strict=True))
    parts: list[dict[str, Any]] = []
    cut: list[int] = []
    for index in kept:
        if index is None:
            omitted = len(headers) - len(indices)
            parts.append({"omitted": f"{omitted} tool calls omitted to fit the budget"})
            continue
        outcome = _cut(outcomes[index], max(shares[index], floors[index]), None, notes)
        cut += [index + 1] if outcome != outcomes[index] else []
        call = trace.tool_calls[index]
        entry: dict[str, Any] = {
            "call": index + 1,
            "tool": call.name,
            "arguments": _arguments(call),
        }
        if call.error:
            entry["error"] = call.error
        if outcome:
            entry["result"] = outcome
        parts.append(entry)
    if cut:
        shown = ", ".join(map(str, cut[:12])) + (", …" if len(cut) > 12 else "")
        notes.append(f"the results of {len(cut)} tool call(s) are cut (calls {shown})")
    return parts


def _user_section(trace: AgentTrace, budget: int, notes: list[str]) -> list[str]:
    inputs = list(trace.user_inputs) or ["(no user input recorded)"]
    shares = allocate([len(u) for u in inputs], budget)
    return [
        _cut(text, share, f"user input {n}", notes)
        for n, (text, share) in enumerate(zip(inputs, shares, strict=True), start=1)
    ]


_DOCUMENT_CHARS = 24
"""Room for the label and indentation of one retrieved or reference document."""


def _context_items(trace: AgentTrace, case: Case | None) -> list[tuple[str, dict[str, Any], str]]:
    """(section, the document's fields but its content, its content) of every retrieved and
    reference document."""
    items: list[tuple[str, dict[str, Any], str]] = []
    for number, retrieval in enumerate(trace.retrievals, start=1):
        for index, document in enumerate(retrieval.documents, start=1):
            fields: dict[str, Any] = {"document": f"R{number}.{index}"}
            fields["id"] = document.id or "document"
            if document.score is not None:
                fields["score"] = float(f"{document.score:.3g}")
            items.append((f"R{number}", fields, document.content or "(content not recorded)"))
    if case is not None:
        for index, reference in enumerate(case.reference_documents, start=1):
            fields = {"reference": index, "id": reference.id or "reference"}
            items.append(("reference", fields, reference.content))
    return items


def _retrieval(trace: AgentTrace, number: int) -> dict[str, Any]:
    """One retrieval's header: its name, query, what it found, its error."""
    retrieval = trace.retrievals[number - 1]
    query = "(query not recorded)" if retrieval.query is None else json.dumps(retrieval.query)
    entry: dict[str, Any] = {
        "retrieval": f"R{number}",
        "name": retrieval.name or "retrieval",
        "query": query[:ARGUMENTS_CHARS],
        "found": (
            f"{len(retrieval.documents)} document(s)"
            if retrieval.documents_recorded
            else "documents not recorded"
        ),
    }
    if retrieval.error:
        entry["error"] = retrieval.error
    return entry


def _context_sections(
    trace: AgentTrace, case: Case | None, budget: int, notes: list[str]
) -> dict[str, Any]:
    """``retrieved_documents`` (each retrieval with its documents, in retrieval order) and
    ``reference_context`` within ``budget`` characters; documents share it fairly."""
    items = _context_items(trace, case)
    headers = [_retrieval(trace, n) for n in range(1, len(trace.retrievals) + 1)]
    room = budget - sum(len(json.dumps(h)) + 1 for h in headers)
    room -= sum(len(json.dumps(fields)) + _DOCUMENT_CHARS for _, fields, _ in items)
    shares = allocate([len(content) for _, _, content in items], room)
    cut = 0
    documents: dict[str, list[dict[str, Any]]] = {}
    for (section, fields, content), share in zip(items, shares, strict=True):
        shown = _cut(content, max(share, min(len(content), _MIN_RESULT_CHARS)), None, notes)
        cut += shown != content
        documents.setdefault(section, []).append({**fields, "content": shown})
    if cut:
        notes.append(f"the content of {cut} retrieved or reference document(s) is cut")
    sections: dict[str, Any] = {}
    if trace.retrievals:
        sections["retrieved_documents"] = [
            {**header, "documents": documents.get(header["retrieval"], [])} for header in headers
        ]
    if "reference" in documents:
        sections["reference_context"] = documents["reference"]
    return sections


def build_evidence(
    trace: AgentTrace, budget_tokens: int = 6000, case: Case | None = None
) -> Evidence:
    """The evidence of ``trace`` (and ``case``'s reference) within ``budget_tokens``
    (estimated; see the module docstring). JSON escaping (quotes in tool arguments, newlines)
    costs more than the parts' lengths say: when the document is over the budget, it is
    built again for a budget less the excess.

    Raises:
        ValueError: ``budget_tokens`` below 200.
    """
    if budget_tokens < 200:
        raise ValueError(
            f"an evidence budget of {budget_tokens} tokens is too small (at least 200)"
        )
    target = budget_tokens
    for _ in range(8):
        evidence = _evidence(trace, case, target, budget_tokens)
        if evidence.estimated_tokens <= budget_tokens:
            break
        target = max(target * budget_tokens // evidence.estimated_tokens - 10, 1)
    return evidence


def _evidence(
    trace: AgentTrace, case: Case | None, target_tokens: int, budget_tokens: int
) -> Evidence:
    """The evidence built for ``target_tokens``; its note states ``budget_tokens``."""
    budget = target_tokens * CHARS_PER_TOKEN - 600  # 600 characters for the notes
    notes: list[str] = []
    users = _user_section(trace, int(budget * _USER_SHARE), notes)
    final = _cut(
        trace.final_output or "(the trace records no final answer)",
        int(budget * _ANSWER_SHARE),
        "final answer",
        notes,
    )
    rest = budget - sum(len(u) for u in users) - len(final)
    items = _context_items(trace, case)
    context: dict[str, Any] = {}
    if trace.retrievals or items:
        tool_chars = sum(
            len(h) + len(_outcome(c)) + _LINE_CHARS
            for h, c in zip(_headers(trace), trace.tool_calls, strict=True)
        )
        context_chars = sum(len(json.dumps(i[1])) + len(i[2]) + _DOCUMENT_CHARS for i in items)
        _, context_room = allocate([tool_chars + 80, context_chars + 200], rest)
        context = _context_sections(trace, case, context_room, notes)
        rest -= len(json.dumps(context, ensure_ascii=False))
    tools = _tool_section(trace, rest, notes)
    document: dict[str, Any] = {}
    if notes:
        document["truncated"] = (
            f"this evidence was truncated to fit a budget of about {budget_tokens:,} tokens; "
            "what is cut is marked where it happens: " + "; ".join(notes) + "."
        )
    if (gap := trace.gap("tool_results")) is not None and trace.tool_calls:
        document["note"] = f"the trace does not record every tool result ({gap.reason})."
    document |= {"user_inputs": users, "tool_calls": tools, **context, "final_answer": final}
    text = fenced_json(document)
    return Evidence(text, bool(notes), tuple(notes), estimate_tokens(text), bool(context))


def describe(evidence: Evidence) -> dict[str, Any]:
    """The evidence's metadata for a score's details:
    ``{"estimated_tokens", "truncated", "notes"}``."""
    return {
        "estimated_tokens": evidence.estimated_tokens,
        "truncated": evidence.truncated,
        "notes": list(evidence.notes),
    }
