"""Argument predicates: what an expected tool call says about one argument.

In a golden dataset, ``expected_tool_calls[].arguments`` maps each argument name to either a
plain value (must equal it) or an object of operators:

==========================  ===========================================================
``equals: V``               equal to V (numbers compare by value: ``5 == 5.0``)
``one_of: [V1, V2]``        equal to one of them; ``""`` in the list means the argument
                            may be omitted (BFCL ``possible_answer`` convention)
``lte: N`` / ``<=: N``       at most N (numeric bounds, as the next three)
``gte: N`` / ``>=: N``       at least N
``lt: N`` / ``<: N``         below N
``gt: N`` / ``>: N``         above N
``regex: P``                a string that P matches somewhere (RE2: linear time)
``contains: S``             a string containing S
``subset: [..] | {..}``     a list holding all these items / an object holding these pairs
``any: true``               present, any value
``optional: true``          may be omitted; if present, the other operators apply
``ignore_case: true``       string comparisons ignore case
==========================  ===========================================================

:func:`parse_predicate` validates a spec at dataset load time (an unknown operator is an
error listing the valid ones); :meth:`Predicate.check` is pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade._util.user_regex import UserRegexError, compile_user_regex

MISSING: Any = object()
"""The actual value of an argument the call did not pass."""

_ALIASES = {"<=": "lte", ">=": "gte", "<": "lt", ">": "gt", "eq": "equals", "in": "one_of"}
_SYMBOLS = {"lte": "<=", "gte": ">=", "lt": "<", "gt": ">"}
OPERATORS = frozenset(
    {
        "equals",
        "one_of",
        "lte",
        "gte",
        "lt",
        "gt",
        "regex",
        "contains",
        "subset",
        "any",
        "optional",
        "ignore_case",
    }
)


class PredicateError(ValueError):
    """An invalid predicate spec (raised at dataset load)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_equal(expected: Any, actual: Any, *, ignore_case: bool = False) -> bool:
    """Deep equality: numbers by value, dict keys in any order, lists in order."""
    if _is_number(expected) and _is_number(actual):
        return float(expected) == float(actual)
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.casefold() == actual.casefold() if ignore_case else expected == actual
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(
            values_equal(v, actual[k], ignore_case=ignore_case) for k, v in expected.items()
        )
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(
            values_equal(e, a, ignore_case=ignore_case)
            for e, a in zip(expected, actual, strict=True)
        )
    return type(expected) is type(actual) and expected == actual


def _contains_all(expected: Any, actual: Any, ignore_case: bool) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and values_equal(v, actual[k], ignore_case=ignore_case)
            for k, v in expected.items()
        )
    if isinstance(actual, (list, tuple)):
        return all(
            any(values_equal(e, a, ignore_case=ignore_case) for a in actual) for e in expected
        )
    return False


@dataclass(frozen=True)
class Predicate:
    """A parsed predicate on one argument (see the module docstring)."""

    operators: Mapping[str, Any]

    @property
    def optional(self) -> bool:
        """True when the argument may be omitted."""
        return bool(self.operators.get("optional")) or "" in (self.operators.get("one_of") or ())

    def describe(self) -> str:
        """A short human form, e.g. ``one of ["a", "b"]`` or ``<= 500``."""
        ops = {k: v for k, v in self.operators.items() if k not in ("optional", "ignore_case")}
        parts = [
            json.dumps(v, ensure_ascii=False)
            if k == "equals"
            else f"{_SYMBOLS.get(k, k.replace('_', ' '))} {json.dumps(v, ensure_ascii=False)}"
            for k, v in ops.items()
        ]
        return (
            " and ".join(parts) + (" (optional)" if self.optional else "") if parts else "optional"
        )

    def check(self, actual: Any) -> tuple[bool, str]:
        """(satisfied, reason); ``actual`` is :data:`MISSING` when the argument was omitted."""
        if actual is MISSING:
            return (True, "omitted (allowed)") if self.optional else (False, "missing")
        ignore_case = bool(self.operators.get("ignore_case"))
        for name, expected in self.operators.items():
            if name in ("optional", "ignore_case", "any"):
                continue
            if not _CHECKS[name](expected, actual, ignore_case):
                got = json.dumps(actual, ensure_ascii=False, default=str)
                return False, f"expected {self.describe()}, got {got}"
        return True, "ok"


def _one_of(expected: Sequence[Any], actual: Any, ignore_case: bool) -> bool:
    return any(values_equal(e, actual, ignore_case=ignore_case) for e in expected if e != "")


def _bound(compare: Any) -> Any:
    return lambda expected, actual, _: (
        _is_number(actual) and compare(float(actual), float(expected))
    )


def _regex(pattern: str, actual: Any, ignore_case: bool) -> bool:
    """RE2's search (:mod:`tracegrade._util.user_regex`: linear in the argument's length)."""
    return (
        isinstance(actual, str)
        and compile_user_regex(pattern, ignore_case).search(actual) is not None
    )


def _contains(needle: str, actual: Any, ignore_case: bool) -> bool:
    if not isinstance(actual, str):
        return False
    return needle.casefold() in actual.casefold() if ignore_case else needle in actual


_CHECKS = {
    "equals": lambda e, a, ic: values_equal(e, a, ignore_case=ic),
    "one_of": _one_of,
    "lte": _bound(lambda a, e: a <= e),
    "gte": _bound(lambda a, e: a >= e),
    "lt": _bound(lambda a, e: a < e),
    "gt": _bound(lambda a, e: a > e),
    "regex": _regex,
    "contains": _contains,
    "subset": lambda e, a, ic: _contains_all(e, a, ic),
}


def _is_operator_spec(spec: Any) -> bool:
    return (
        isinstance(spec, Mapping)
        and bool(spec)
        and all(_ALIASES.get(k, k) in OPERATORS for k in spec)
    )


def parse_predicate(spec: Any) -> Predicate:
    """A :class:`Predicate` from a dataset spec: a plain value means ``equals``.

    Raises:
        PredicateError: a bound that is not a number, a bad regex, a ``one_of`` that is not
            a list, or an object mixing operators with other keys.
    """
    if not _is_operator_spec(spec):
        if isinstance(spec, Mapping) and any(k in OPERATORS or k in _ALIASES for k in spec):
            unknown = sorted(k for k in spec if _ALIASES.get(k, k) not in OPERATORS)
            raise PredicateError(
                f"unknown operator(s) {unknown}; valid: {sorted(OPERATORS | set(_ALIASES))}"
            )
        return Predicate({"equals": spec})
    operators = {_ALIASES.get(k, k): v for k, v in spec.items()}
    for name in ("lte", "gte", "lt", "gt"):
        if name in operators and not _is_number(operators[name]):
            raise PredicateError(f"{name} needs a number, got {operators[name]!r}")
    if "one_of" in operators and not isinstance(operators["one_of"], (list, tuple)):
        raise PredicateError(f"one_of needs a list, got {operators['one_of']!r}")
    if "regex" in operators:
        if not isinstance(operators["regex"], str):
            raise PredicateError(f"regex needs a string, got {operators['regex']!r}")
        try:
            compile_user_regex(operators["regex"])
        except UserRegexError as exc:
            raise PredicateError(f"invalid regex: {exc}") from None
    return Predicate(operators)


@dataclass(frozen=True)
class ArgumentCheck:
    """The outcome of one argument predicate against one actual call."""

    argument: str
    passed: bool
    reason: str
    actual: Any = None


def check_arguments(
    predicates: Mapping[str, Predicate], actual: Any, *, allow_extra: bool = True
) -> list[ArgumentCheck]:
    """Check every predicate against a call's parsed arguments (a dict; anything else counts
    as no arguments). With ``allow_extra`` False, arguments no predicate names fail too."""
    args = actual if isinstance(actual, Mapping) else {}
    checks = []
    for name, predicate in predicates.items():
        value = args.get(name, MISSING)
        passed, reason = predicate.check(value)
        checks.append(ArgumentCheck(name, passed, reason, None if value is MISSING else value))
    if not allow_extra:
        for name in args.keys() - predicates.keys():
            checks.append(ArgumentCheck(name, False, "unexpected argument", args[name]))
    return checks
