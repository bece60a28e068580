"""Argument predicates against real BFCL ``possible_answer`` files (tests/data/bfcl, Apache-2.0).

Each ground-truth call lists, per argument, its accepted values (``""`` = may be omitted). As
``expected_tool_calls`` these become ``one_of`` predicates; calls built from accepted values
must pass, a changed or missing required argument must fail and be named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracegrade.dataset import Case
from tracegrade.dataset.predicates import MISSING, check_arguments
from tracegrade.scoring.tools import ToolArguments
from tracegrade.trace import AgentTrace, ToolCall

BFCL = Path(__file__).parents[1] / "data" / "bfcl"
FILES = sorted(BFCL.glob("*.possible_answer.jsonl"))


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def expected_calls(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """BFCL ground truth -> expected_tool_calls with one_of predicates."""
    return [
        {
            "name": name,
            "arguments": {arg: {"one_of": values} for arg, values in args.items()},
            "required": True,
        }
        for call in entry["ground_truth"]
        for name, args in call.items()
    ]


def accepted(values: list[Any], choice: int = 0) -> Any:
    """The choice-th accepted value that is not the omission marker, or MISSING if only ""."""
    real = [v for v in values if v != ""]
    return real[choice % len(real)] if real else MISSING


def actual_args(
    spec: dict[str, list[Any]], choice: int = 0, omit_optional: bool = False
) -> dict[str, Any]:
    args = {}
    for arg, values in spec.items():
        value = accepted(values, choice)
        if value is MISSING or (omit_optional and "" in values):
            continue
        args[arg] = value
    return args


def perturbed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1234.5
    if isinstance(value, str):
        return value + "-changed"
    if isinstance(value, list):
        return [*value, "extra"]
    if isinstance(value, dict):
        return {**value, "extra": 1}
    return "changed"


def trace_with(calls: list[tuple[str, dict[str, Any]]]) -> AgentTrace:
    return AgentTrace(
        "0" * 32,
        ("question",),
        "answer",
        (),
        tuple(
            ToolCall(name, f"call_{i}", args, "ok", llm_call_index=0)
            for i, (name, args) in enumerate(calls)
        ),
    )


@pytest.fixture(params=FILES, ids=lambda p: p.name.split(".")[0])
def bfcl(request):
    return entries(request.param)


def test_every_entry_loads_as_expected_tool_calls(bfcl):
    for entry in bfcl:
        case = Case(id=entry["id"], input="q", expected_tool_calls=expected_calls(entry))
        assert len(case.expected_tool_calls) == len(entry["ground_truth"])


def test_calls_built_from_accepted_values_pass(bfcl):
    for entry in bfcl:
        case = Case(id=entry["id"], input="q", expected_tool_calls=expected_calls(entry))
        for expected, gt in zip(case.expected_tool_calls, entry["ground_truth"], strict=True):
            (spec,) = gt.values()
            for choice in range(3):
                checks = check_arguments(expected.predicates, actual_args(spec, choice))
                assert all(c.passed for c in checks), (
                    entry["id"],
                    [c for c in checks if not c.passed],
                )


def test_omitting_optional_arguments_passes(bfcl):
    optional = 0
    for entry in bfcl:
        case = Case(id=entry["id"], input="q", expected_tool_calls=expected_calls(entry))
        for expected, gt in zip(case.expected_tool_calls, entry["ground_truth"], strict=True):
            (spec,) = gt.values()
            optional += sum("" in v for v in spec.values())
            assert all(
                c.passed
                for c in check_arguments(expected.predicates, actual_args(spec, omit_optional=True))
            )
    assert optional > 0 or bfcl[0]["id"].startswith("live")


def test_a_changed_or_missing_required_argument_fails_and_is_named(bfcl):
    checked = 0
    for entry in bfcl:
        case = Case(id=entry["id"], input="q", expected_tool_calls=expected_calls(entry))
        for expected, gt in zip(case.expected_tool_calls, entry["ground_truth"], strict=True):
            (spec,) = gt.values()
            required = [a for a, v in spec.items() if "" not in v]
            for arg in required:
                args = actual_args(spec)
                args[arg] = perturbed(args[arg])
                failed = [c for c in check_arguments(expected.predicates, args) if not c.passed]
                assert [c.argument for c in failed] == [arg] and "got" in failed[0].reason
                del args[arg]
                failed = [c for c in check_arguments(expected.predicates, args) if not c.passed]
                assert [(c.argument, c.reason) for c in failed] == [(arg, "missing")]
                checked += 1
    assert checked > 0


def test_parallel_calls_in_any_order_all_match(bfcl):
    scorer = ToolArguments()
    for entry in bfcl:
        calls = [
            (name, actual_args(spec)) for gt in entry["ground_truth"] for name, spec in gt.items()
        ]
        case = Case(id=entry["id"], input="q", expected_tool_calls=expected_calls(entry))
        score = scorer(trace_with(list(reversed(calls))), case)
        assert score.value == 1.0 and not score.hard_failures, (entry["id"], score.reason)
