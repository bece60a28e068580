"""Promote a reviewed conversation to a golden case (``tracegrade review promote``, the Review
page's "promote" action): the case :mod:`tracegrade.curate.promote` derives and the reviewer
edits, appended to a dataset file (comments and key order kept, written atomically) or to a
dataset stored in the database (``store:NAME``, created when new), after ``load_dataset``
accepted the result. The case's ``label`` is the reviewer's, else the conversation's latest
label."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tracegrade.curate.promote import CaseEdits, append_case, promoted_case
from tracegrade.dataset.editing import write_atomically
from tracegrade.errors import DatasetError, StoreError
from tracegrade.pipeline.review import conversation_of
from tracegrade.store import datasets as stored_datasets
from tracegrade.store import review as queue_store
from tracegrade.store.traces import Store

STORE_PREFIX = "store:"
"""A dataset named ``store:NAME`` is kept in the database (:mod:`tracegrade.store.datasets`)."""


@dataclass(frozen=True)
class Promoted:
    """The case written and where: a file path or ``store:NAME``."""

    case: dict[str, Any]
    dataset: str


def promote(
    store: Store, trace_ids: Sequence[str], dataset: str, reviewer: str, edits: CaseEdits
) -> Promoted:
    """Append the case of the conversation of ``trace_ids`` to ``dataset`` (a file path, or
    ``store:NAME``).

    Raises:
        StoreError: none of the traces is stored.
        DatasetError: the dataset does not load, has the case id already, or the case would
            not load (the message names the field).
    """
    conversation = conversation_of(store, trace_ids)
    if edits.label is None:
        labels = queue_store.labels(store.db, conversation=conversation.key)
        if labels and labels[-1].verdict in ("pass", "fail"):
            edits = replace(edits, label=labels[-1].verdict)  # type: ignore[arg-type]
    case = promoted_case(conversation.as_curated(), edits, reviewer)
    if dataset.startswith(STORE_PREFIX):
        name = dataset.removeprefix(STORE_PREFIX)
        try:
            text = stored_datasets.get_dataset(store, name).text
        except StoreError:
            text = f"name: {name}\ncases: []\n"
        stored_datasets.put_dataset(store, name, append_case(text, ".yaml", case, dataset))
        return Promoted(case, dataset)
    path = Path(dataset)
    text = path.read_text(encoding="utf-8") if path.exists() else f"name: {path.stem}\ncases: []\n"
    if path.suffix.lower() not in (".yaml", ".yml", ".json", ".jsonl"):
        raise DatasetError(f"{path}: a dataset file is .yaml, .yml, .json or .jsonl")
    new_text = append_case(text, path.suffix.lower(), case, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, new_text)
    return Promoted(case, str(path))
