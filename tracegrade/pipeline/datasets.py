"""Golden datasets by reference: a file, or a dataset kept in the store (``store:NAME``).

A stored dataset is what the dashboard's case editor writes when a team edits cases without
git (:mod:`tracegrade.store.datasets`). It is first-class wherever a dataset is taken:
``tracegrade run store:NAME``, ``score --dataset store:NAME``, ``judge-check store:NAME``,
``runs --dataset``, ``history`` and ``compare --dataset``; and ``tracegrade dataset export
NAME`` (or the editor's export link) writes it out as the YAML
file it is, to review in git or run anywhere. A stored dataset is loaded exactly as a file
(:func:`~tracegrade.dataset.load_dataset` on its text, as ``NAME.yaml``): the same
validation, messages naming ``store:NAME`` and its line, its ``source`` ``store:NAME`` and
its digest that of its text, so runs of it compare like runs of a file.
"""

from __future__ import annotations

from pathlib import Path

from tracegrade.dataset import Dataset, load_dataset, load_dataset_text
from tracegrade.errors import DatasetError, StoreError
from tracegrade.store import datasets as stored
from tracegrade.store.traces import Store

STORE_PREFIX = "store:"
"""How a dataset reference names a stored dataset: ``store:NAME``."""


def stored_name(ref: str | Path | None) -> str | None:
    """NAME of a ``store:NAME`` reference, else None (a file, or nothing)."""
    if isinstance(ref, str) and ref.startswith(STORE_PREFIX):
        return ref[len(STORE_PREFIX) :]
    return None


def stored_dataset(store: Store, name: str) -> Dataset:
    """The stored dataset ``name``, validated as a file is (see the module docstring).

    Raises:
        StoreError: no stored dataset of that name (the message lists the stored ones).
        DatasetError: it is not a valid dataset (every problem, named ``store:NAME:LINE``).
    """
    dataset = load_dataset_text(_text(store, name), ".yaml", f"{STORE_PREFIX}{name}")
    return dataset.model_copy(update={"source": f"{STORE_PREFIX}{name}"})


def open_dataset(ref: str | Path, db: str | None = None) -> Dataset:
    """The dataset ``ref`` names: ``store:NAME`` in the store at ``db`` (None: the default
    store), else a file.

    Raises:
        DatasetError: an unreadable or invalid dataset.
        StoreError: the store cannot be opened, or holds no such dataset.
    """
    name = stored_name(ref)
    if name is None:
        return load_dataset(ref)
    if not name:
        raise DatasetError(f"{ref!r}: name the stored dataset, store:NAME")
    with Store(db) as store:
        return stored_dataset(store, name)


def dataset_filter(store: Store, ref: str | None) -> str | None:
    """The dataset name runs are stored under, for a ``--dataset`` / ``DATASET`` filter: a
    file's or stored dataset's own name (``store:NAME`` whose dataset was since deleted:
    NAME), else ``ref`` as given (a dataset name)."""
    name = stored_name(ref)
    if name is not None:
        try:
            return stored_dataset(store, name).name
        except (StoreError, DatasetError):
            return name
    if ref and Path(ref).is_file():
        return load_dataset(ref).name
    return ref


def export_dataset(name: str, db: str | None = None) -> str:
    """The YAML text of the stored dataset ``name`` (as the editor wrote it, comments kept).

    Raises:
        StoreError: no stored dataset of that name, or no store.
    """
    with Store(db) as store:
        return _text(store, name)


def _text(store: Store, name: str) -> str:
    try:
        return stored.get_dataset(store, name).text
    except StoreError:
        known = ", ".join(stored.list_datasets(store)) or "none"
        raise StoreError(
            f"no dataset {name!r} stored in {store.location} (stored datasets: {known})"
        ) from None
