"""How exactly tracegrade reads real agent frameworks: a framework x field table.

    python benchmarks/frameworks.py [RECORDING...] [--json | --markdown] [--failures] [--min 0.99]

Each recording (``tests/data/frameworks/<setup>/``, made by ``tests/frameworks/record.py``)
holds the traces a real framework exported while it ran the scripted scenarios, and
``truth.json``: what the scripted model and the tools really did, turn by turn. Every trace
is normalised as ``tracegrade inspect`` does it and assigned to the turn whose time window
overlaps it most (a trace with neither LLM nor tool calls, such as LangGraph's
``create_agent``, is no turn's); then, per turn, each field is *exact* or not:

- ``tool_calls``: the executed tool calls, names and arguments, in order (calls the model
  requested in one message compare as a set: a framework may run them in any order);
- ``tool_results``: each call's result (JSON-equal) or, for a tool that raised, an error;
- ``final_answer``, ``user_inputs`` (the user message new in the turn), ``history`` (the
  conversation's earlier user messages, carried by the turn's first LLM call);
- ``input_tokens``, ``output_tokens`` (usage the model reported, summed), ``llm_calls``;
- ``conversation``: the turn's trace is grouped with exactly the traces of its own
  conversation (:func:`tracegrade.normalize.conversations.group_conversations`);
- ``retrievals`` (RAG setups, whose truth records what the retriever returned): each
  retrieval's query and its documents' ids, in order.

A field is not applicable where the truth has nothing to compare (no tool calls; no usage
sent) or the setup declares its spans cannot carry it (``not_recorded`` in its setup file,
for the whole setup or some scenarios). A turn whose
traces are missing fails every field. ``--min`` makes the exit status 1 when some applicable
field of some setup is exact on fewer than that share of turns.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracegrade.normalize.conversations import group_conversations  # noqa: E402
from tracegrade.pipeline.reading import from_files  # noqa: E402
from tracegrade.trace import AgentTrace  # noqa: E402

RECORDINGS = ROOT / "tests" / "data" / "frameworks"
SETUPS = ROOT / "tests" / "frameworks" / "setups"
FIELDS = (
    "tool_calls",
    "tool_results",
    "final_answer",
    "user_inputs",
    "history",
    "input_tokens",
    "output_tokens",
    "llm_calls",
    "conversation",
    "retrievals",
)


@dataclass
class FieldScore:
    """Turns where the field was exact, of those where it applies, and why the others failed."""

    exact: int = 0
    applicable: int = 0
    failures: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"exact": self.exact, "applicable": self.applicable, "failures": self.failures}


@dataclass
class SetupScore:
    setup: str
    framework: str | None
    instrumentation: str | None
    turns: int
    traces: int
    fields: dict[str, FieldScore]
    not_recorded: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "setup": self.setup,
            "framework": self.framework,
            "instrumentation": self.instrumentation,
            "turns": self.turns,
            "traces": self.traces,
            "not_recorded": self.not_recorded,
            "fields": {name: score.to_json() for name, score in self.fields.items()},
        }


# --- comparing -------------------------------------------------------------------------------


def _json_or_text(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value.strip()


def _canonical(calls: Sequence[tuple[str, Any]]) -> list[tuple[str, str]]:
    return sorted((name, json.dumps(args, sort_keys=True)) for name, args in calls)


def truth_calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The turn's tool calls in order, each round (one model message) sorted canonically."""
    ordered = []
    for indexes in turn["rounds"]:
        calls = [turn["tool_calls"][i] for i in indexes]
        ordered += sorted(
            calls, key=lambda c: (c["name"], json.dumps(c["arguments"], sort_keys=True))
        )
    return ordered


def trace_calls(trace: AgentTrace) -> list[Any]:
    """The trace's tool calls in order, calls requested by one LLM call sorted canonically."""
    rounds: list[list[Any]] = []
    last: object = object()
    for call in trace.tool_calls:
        if call.llm_call_index is None or call.llm_call_index != last:
            rounds.append([])
        rounds[-1].append(call)
        last = call.llm_call_index
    return [
        call
        for group in rounds
        for call in sorted(group, key=lambda c: (c.name, json.dumps(c.arguments, sort_keys=True)))
    ]


def _check_tools(turn: dict[str, Any], trace: AgentTrace) -> tuple[bool | None, bool | None, str]:
    expected = truth_calls(turn)
    if not expected:
        got = [c.name for c in trace.tool_calls]
        return (None if not got else False), None, f"calls {got} where none were made"
    got = trace_calls(trace)
    pairs = [(e["name"], e["arguments"]) for e in expected]
    seen = [(c.name, c.arguments) for c in got]
    calls_ok = pairs == seen
    results_ok = len(got) == len(expected) and all(
        (c.error is not None)
        if e["error"]
        else _json_or_text(c.result) == _json_or_text(e["result"])
        for e, c in zip(expected, got, strict=False)
    )
    why = ""
    if not calls_ok:
        why = f"calls {seen} != {pairs}"
    elif not results_ok:
        why = "results " + "; ".join(
            f"{c.name}: {c.error or c.result!r:.120} vs {e['error'] or e['result']!r:.120}"
            for e, c in zip(expected, got, strict=False)
        )
    return calls_ok, results_ok, why


def check_turn(turn: dict[str, Any], trace: AgentTrace) -> dict[str, tuple[bool | None, str]]:
    """Each field of one turn: ``(exact, why not)``; ``exact`` None where it does not apply."""
    calls_ok, results_ok, why = _check_tools(turn, trace)
    answer = trace.final_output.strip() if trace.final_output else None
    checks: dict[str, tuple[bool | None, str]] = {
        "tool_calls": (calls_ok, why),
        "tool_results": (results_ok, why),
        "final_answer": (answer == turn["final_answer"], f"{answer!r:.200}"),
        "user_inputs": (
            list(trace.user_inputs) == [turn["user_input"]],
            f"{list(trace.user_inputs)!r:.200}",
        ),
        "history": (list(trace.history) == turn["history"], f"{list(trace.history)!r:.200}"),
        "llm_calls": (len(trace.llm_calls) == turn["llm_calls"], f"{len(trace.llm_calls)}"),
    }
    for name in ("input_tokens", "output_tokens"):
        expected = turn[name]
        got = getattr(trace, name)
        checks[name] = (None if expected is None else got == expected, f"{got} vs {expected}")
    checks["retrievals"] = _check_retrievals(turn, trace)
    return checks


def _check_retrievals(turn: dict[str, Any], trace: AgentTrace) -> tuple[bool | None, str]:
    """Each retrieval's query and document ids, in order (None: the truth has none)."""
    if "retrievals" not in turn:
        return None, ""
    expected = [(r["query"], r["documents"]) for r in turn["retrievals"]]
    got = [(r.query, [d.id for d in r.documents]) for r in trace.retrievals]
    return got == expected, f"{got!r:.200}"


# --- loading ---------------------------------------------------------------------------------


SKEW_NS = 50_000_000
"""How far a trace may lie outside its turn's window: JavaScript SDKs take span times from
``performance.timeOrigin`` (ms precision), the driver from ``Date.now``; the two drift by a
few milliseconds."""


def assign(turns: list[dict[str, Any]], traces: list[AgentTrace]) -> list[list[AgentTrace]]:
    """The traces of each turn: each trace goes to the turn whose time window overlaps it
    most (within :data:`SKEW_NS` of clock skew)."""
    found: list[list[AgentTrace]] = [[] for _ in turns]
    for trace in traces:
        fits = [_fit(trace, turn) for turn in turns]
        best = max(range(len(turns)), key=fits.__getitem__, default=None)
        if best is not None and fits[best][0] >= -SKEW_NS:
            found[best].append(trace)
    return found


def _fit(trace: AgentTrace, turn: dict[str, Any]) -> tuple[int, int]:
    """(overlap of the trace with the turn's window, minus the distance of their starts)."""
    start = trace.start_unix_nano
    end = start + int(trace.duration_ms * 1e6)
    overlap = min(end, turn["end_ns"]) - max(start, turn["start_ns"])
    return overlap, -abs(start - turn["start_ns"])


def _conversation_checks(
    turns: list[dict[str, Any]], chosen: list[AgentTrace | None], traces: list[AgentTrace]
) -> list[tuple[bool, str]]:
    keys = group_conversations(traces)
    results = []
    for turn, trace in zip(turns, chosen, strict=True):
        if trace is None:
            results.append((False, "no trace"))
            continue
        mine = keys[trace.trace_id]
        ok = all(
            (keys[other.trace_id] == mine) == (other_turn["conversation"] == turn["conversation"])
            for other_turn, other in zip(turns, chosen, strict=True)
            if other is not None
        )
        results.append((ok, f"key {mine}"))
    return results


def score_recording(path: Path) -> SetupScore:
    """Compare one recording with its truth (see the module docstring)."""
    truth = json.loads((path / "truth.json").read_text())
    files = sorted(p for p in path.iterdir() if p.name.startswith("traces."))
    traces = from_files(files).traces
    turns = truth["turns"]
    by_turn = [[t for t in found if t.llm_calls or t.tool_calls] for found in assign(turns, traces)]
    chosen = [max(found, key=lambda t: t.span_count) if found else None for found in by_turn]
    not_recorded = declared_gaps(truth["setup"])
    fields = {name: FieldScore() for name in FIELDS}
    conversations = _conversation_checks(turns, chosen, traces)
    for turn, found, trace, conversation in zip(turns, by_turn, chosen, conversations, strict=True):
        label = f"{turn['scenario']}#{turn['turn']}"
        checks: dict[str, tuple[bool | None, str]]
        applicable = [n for n in FIELDS if n != "retrievals" or "retrievals" in turn]
        if trace is None:
            checks = {name: (False, "no trace in the turn's window") for name in applicable}
        else:
            checks = check_turn(turn, trace)
            checks["conversation"] = conversation
            if len(found) > 1:
                why = f"turn split over {len(found)} traces"
                checks = {name: (False, why) for name in applicable}
        for name, (exact, why) in checks.items():
            if exact is None or _declared(not_recorded, name, turn["scenario"]):
                continue
            score = fields[name]
            score.applicable += 1
            if exact:
                score.exact += 1
            else:
                score.failures.append(f"{label}: {why}")
    return SetupScore(
        truth["setup"],
        truth.get("framework"),
        truth.get("instrumentation"),
        len(turns),
        len(traces),
        fields,
        _whole_setup(not_recorded),
    )


def declared_gaps(setup: str) -> dict[str, Any]:
    """The setup's ``not_recorded`` fields (``tests/frameworks/setups/<setup>.json``): a
    field name -> why (the whole setup), or -> ``{"scenarios": [...], "why": ...}``."""
    path = SETUPS / f"{setup}.json"
    declared = json.loads(path.read_text()).get("not_recorded", {}) if path.exists() else {}
    return {k: v for k, v in declared.items() if k in FIELDS}


def reader_pending(setup: str) -> str | None:
    """Why a setup is recorded but not yet read exactly (``reader_pending`` in its setup
    file): a new recording lands before the reader reads it; the tests expect its failures
    and the docs' table leaves it out until the key is removed."""
    path = SETUPS / f"{setup}.json"
    return json.loads(path.read_text()).get("reader_pending") if path.exists() else None


def _declared(not_recorded: dict[str, Any], field_name: str, scenario: str) -> bool:
    entry = not_recorded.get(field_name)
    if isinstance(entry, dict):
        return scenario in entry.get("scenarios", ())
    return entry is not None


def _whole_setup(not_recorded: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in not_recorded.items() if not isinstance(v, dict)}


# --- reporting -------------------------------------------------------------------------------


def _cell(score: FieldScore, name: str, not_recorded: dict[str, str]) -> str:
    if name in not_recorded:
        return "n/r"
    if not score.applicable:
        return "-"
    return f"{score.exact}/{score.applicable}"


def table(results: list[dict[str, Any]], failures: bool = False) -> None:
    header = ["setup", *FIELDS]
    rows = []
    for result in results:
        fields = result["fields"]
        rows.append(
            [
                result["setup"],
                *(_cell(FieldScore(**fields[n]), n, result["not_recorded"]) for n in FIELDS),
            ]
        )
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
    exact = sum(f["exact"] for r in results for f in r["fields"].values())
    applicable = sum(f["applicable"] for r in results for f in r["fields"].values())
    print(f"\n{exact}/{applicable} field checks exact ({exact / max(1, applicable):.1%})")
    print("n/r: the setup's spans cannot carry the field (setup's not_recorded); -: no such data")
    if failures:
        for result in results:
            for name, score in result["fields"].items():
                for failure in score["failures"]:
                    print(f"  {result['setup']} {name}: {failure}")


_GENERIC = (
    "opentelemetry-sdk",
    "opentelemetry-api",
    "opentelemetry-exporter",
    "@opentelemetry/sdk",
    "@opentelemetry/api",
    "@opentelemetry/exporter",
    "@opentelemetry/instrumentation ",
    "openinference-semantic",
    "@arizeai/openinference-semantic",
    "@arizeai/openinference-core",
    "@traceloop/ai-semantic",
    "@langchain/langgraph-checkpoint",
    "@ai-sdk/provider-utils",
    "@openai/agents-",
    "zod",
    "google-genai",
)
"""Packages every setup has (the OpenTelemetry SDK, shared conventions): not listed."""


def _versions(setup: str) -> str:
    """The recorded versions of the setup's own packages (not the SDK's), and the runtime."""
    path = RECORDINGS / setup / "versions.json"
    versions = json.loads(path.read_text()) if path.exists() else {}
    runtime = {k: versions.pop(k) for k in ("python", "node") if k in versions}
    own = [
        f"{k} {v}"
        for k, v in versions.items()
        if not k.startswith(_GENERIC) and k != "openinference-instrumentation"
    ]
    return ", ".join(own + [f"{k} {v.lstrip('v')}" for k, v in runtime.items()])


def markdown(results: list[dict[str, Any]]) -> None:
    """The verified frameworks as a Markdown table (for the README and the docs)."""
    print("| framework | instrumentation (mode) | versions recorded | exact | not in its spans |")
    print("|---|---|---|---|---|")
    for r in results:
        if reader_pending(r["setup"]):
            continue
        exact = sum(f["exact"] for f in r["fields"].values())
        applicable = sum(f["applicable"] for f in r["fields"].values())
        setup = json.loads((SETUPS / f"{r['setup']}.json").read_text())
        mode = f" ({setup['mode']})" if setup.get("mode") else ""
        missing = ", ".join(sorted(declared_gaps(r["setup"]))) or "-"
        print(
            f"| {r['framework']} | {r['instrumentation']}{mode} | {_versions(r['setup'])} "
            f"| {exact}/{applicable} | {missing} |"
        )


def below(results: list[dict[str, Any]], minimum: float) -> list[str]:
    """``setup.field`` entries exact on fewer than ``minimum`` of their applicable turns."""
    return [
        f"{r['setup']}.{name}"
        for r in results
        for name, f in r["fields"].items()
        if f["applicable"] and f["exact"] / f["applicable"] < minimum
    ]


def recordings(paths: Sequence[str]) -> list[Path]:
    if paths:
        return [Path(p) for p in paths]
    return sorted(p for p in RECORDINGS.iterdir() if (p / "truth.json").exists())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recordings", nargs="*")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--failures", action="store_true", help="list every inexact turn")
    parser.add_argument("--markdown", action="store_true", help="the frameworks as a table")
    parser.add_argument("--min", type=float, default=None, help="exit 1 below this share")
    args = parser.parse_args(argv)
    results = [score_recording(p).to_json() for p in recordings(args.recordings)]
    if args.json:
        print(json.dumps(results, indent=2))
    elif args.markdown:
        markdown(results)
    else:
        table(results, args.failures)
    if args.min is not None and (low := below(results, args.min)):
        print(f"below {args.min:.0%}: {', '.join(low)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
