"""Golden datasets: cases, how they are loaded and checked, selected, mapped to traces, edited.

- :mod:`.cases`: the :class:`Case` and :class:`Dataset` models (the design documents' JSON
  shape and its extensions), :func:`load_dataset` (YAML, JSON, JSONL);
- :mod:`.shapes`: the other shapes a dataset may come in (the design documents' files), mapped
  onto a case's fields;
- :mod:`.located`: validation errors with the file, line and field they are about;
- :mod:`.predicates`: predicates on tool arguments (equals, one-of, <=, >=, regex, subset);
- :mod:`.trajectories`: how tool calls and their arguments are matched (``tool_calls_match``,
  ``arguments_match``), in the other evaluators' words;
- :mod:`.selection`: the cases a run takes (tier, tags, ids);
- :mod:`.mapping`: the ``--mapping`` file (case id -> trace ids);
- :mod:`.editing`: round-trip editing of a dataset file (the dashboard's case editor).
"""

from tracegrade.dataset.cases import (
    Budget,
    Case,
    Dataset,
    ExpectedToolCall,
    Judge,
    ReferenceDocument,
    Tier,
    load_dataset,
    load_dataset_text,
)
from tracegrade.dataset.mapping import load_mapping
from tracegrade.dataset.predicates import Predicate, PredicateError, parse_predicate
from tracegrade.dataset.selection import select_cases

__all__ = [
    # cases
    "Budget",
    "Case",
    "Dataset",
    "ExpectedToolCall",
    "Judge",
    "ReferenceDocument",
    "Tier",
    "load_dataset",
    "load_dataset_text",
    # predicates
    "Predicate",
    "PredicateError",
    "parse_predicate",
    # selection and mapping
    "select_cases",
    "load_mapping",
]
