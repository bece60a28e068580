"""What a report calls a scorer, beside the name it is stored under.

A scorer's name is its key everywhere it is stored or configured (``weights:`` in
``config/scoring.yaml``, a run document's ``scores`` and ``details``, a baseline compared case
by case), so it never changes. Reports show :func:`scorer_label` instead, where the name
would mislead a reader: the ``hallucination`` scorer's value is the fraction of a case's
``must_contain`` phrases found in the answer, and a phrase missing is not an invented fact
(``must_not_contain`` hits, and values no tool gave, ``value_grounding``, are).
"""

from __future__ import annotations

LABELS = {"hallucination": "expected phrases"}
"""Scorer name -> the label a report shows; a scorer not listed is shown by its name."""

SELF_DESCRIBING = frozenset({"hallucination"})
"""Scorers whose reason already says what failed ("expected phrase missing: ..."): a case's
reason line is that reason alone, not ``name: reason``."""


def scorer_label(name: str) -> str:
    """The label of scorer (or axis) ``name`` in reports: :data:`LABELS`, else ``name``."""
    return LABELS.get(name, name)


def reason_line(name: str, reason: str) -> str:
    """A case's reason line for scorer ``name`` scoring under 1: ``name: reason``, or
    ``reason`` alone for the :data:`SELF_DESCRIBING` scorers."""
    return reason if name in SELF_DESCRIBING else f"{name}: {reason}"
