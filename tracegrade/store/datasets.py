"""Golden datasets kept in the store (the ``datasets`` table), so a team can edit cases in
``tracegrade ui`` without git.

A stored dataset is the text of a YAML dataset file (the format :mod:`tracegrade.dataset`
reads) under a name; it is validated by writing it to a temporary ``NAME.yaml`` and calling
:func:`tracegrade.dataset.load_dataset`, so it accepts exactly what a file accepts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tracegrade.errors import StoreError
from tracegrade.store.traces import Store


@dataclass(frozen=True)
class StoredDataset:
    """A dataset's YAML ``text`` and when it was last written (Unix s)."""

    name: str
    text: str
    updated_at: float


def list_datasets(store: Store) -> list[str]:
    """Names of the stored datasets, sorted."""
    return [r[0] for r in store.db.execute("SELECT name FROM datasets ORDER BY name")]


def get_dataset(store: Store, name: str) -> StoredDataset:
    """One stored dataset.

    Raises:
        StoreError: no dataset of that name.
    """
    row = store.db.execute(
        "SELECT name, text, updated_at FROM datasets WHERE name = ?", (name,)
    ).fetchone()
    if row is None:
        raise StoreError(f"no dataset {name!r} in {store.location}")
    return StoredDataset(*row)


def put_dataset(store: Store, name: str, text: str) -> None:
    """Create or replace a stored dataset (the caller validated ``text``)."""
    with store.db:
        store.db.execute(
            "INSERT INTO datasets (name, text, updated_at) VALUES (?, ?, ?) ON CONFLICT (name)"
            " DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
            (name, text, time.time()),
        )


def delete_dataset(store: Store, name: str) -> None:
    """Remove a stored dataset (nothing happens when it does not exist)."""
    with store.db:
        store.db.execute("DELETE FROM datasets WHERE name = ?", (name,))
