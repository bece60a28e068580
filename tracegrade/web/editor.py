"""The case editor: list, create, edit, duplicate and delete the golden cases of the
configured dataset files (``tracegrade ui --dataset PATH``) and of datasets stored in the
database (:mod:`tracegrade.store.datasets`).

Only configured files are ever opened: a dataset is addressed by its key (``file:STEM`` or
``store:NAME``), never by a path from the request. Every save re-reads the dataset, checks it
did not change since the form was opened (its digest), applies the form
(:mod:`.casefile`), validates the result with ``load_dataset`` and only then writes it
(atomically, for files).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from ruamel.yaml.comments import CommentedMap
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tracegrade.dataset.editing import (
    AS_YAML,
    CHOICES,
    FIELDS,
    CaseError,
    Document,
    apply_form,
    digest,
    form_values,
    validate,
    write_atomically,
)
from tracegrade.dataset.tool_form import OPERATORS, CallRow, call_rows, collect
from tracegrade.errors import StoreError
from tracegrade.store import datasets as stored
from tracegrade.web.base import Ui, not_found, render, twin, ui_of
from tracegrade.web.pages import case_from_trace
from tracegrade.web.security import state_changing
from tracegrade.web.trace_search import tools_seen

_STORE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class EditableDataset:
    """One editable dataset: a configured file (``path``) or a stored dataset (``name``)."""

    key: str
    kind: Literal["file", "store"]
    label: str
    suffix: str
    path: Path | None = None
    name: str | None = None

    def read(self, ui: Ui) -> str:
        """The dataset's current text.

        Raises:
            StoreError: the file or stored dataset cannot be read.
        """
        if self.path is not None:
            try:
                return self.path.read_text(encoding="utf-8")
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot read dataset: {exc}") from exc
        return stored.get_dataset(ui.store, str(self.name)).text

    def write(self, ui: Ui, text: str) -> None:
        """Replace the dataset's text (a file atomically, through a sibling temporary file
        given the file's own permission bits: a save never changes who may read it)."""
        if self.path is None:
            stored.put_dataset(ui.store, str(self.name), text)
            return
        write_atomically(self.path, text)


def editable_datasets(ui: Ui) -> dict[str, EditableDataset]:
    """Every editable dataset by key: configured files, then stored datasets."""
    out: dict[str, EditableDataset] = {}
    for path in ui.config.datasets:
        key = f"file:{path.stem}"
        n = 2
        while key in out:
            key, n = f"file:{path.stem}-{n}", n + 1
        out[key] = EditableDataset(key, "file", str(path), path.suffix.lower(), path=path)
    for name in stored.list_datasets(ui.store):
        key = f"store:{name}"
        out[key] = EditableDataset(key, "store", f"{name} (stored)", ".yaml", name=name)
    return out


def dataset_choices(ui: Ui) -> list[dict[str, str]]:
    """(key, label) of every editable dataset, for "new case from this trace"."""
    return [{"key": s.key, "label": s.label} for s in editable_datasets(ui).values()]


def _editable(request: Request) -> EditableDataset | None:
    return editable_datasets(ui_of(request)).get(request.path_params["key"])


async def datasets_page(request: Request) -> Response:
    """The editable datasets, and a form to create a stored one."""
    data = {"datasets": dataset_choices(ui_of(request)), "error": None}
    return render(request, "datasets.html", data)


@state_changing
async def create_stored(request: Request, form: FormData) -> Response:
    """Create an empty stored dataset named by the form's ``name``."""
    ui = ui_of(request)
    name = str(form.get("name") or "").strip()
    if not _STORE_NAME.match(name) or f"store:{name}" in editable_datasets(ui):
        error = f"dataset name {name!r}: use letters, digits, '.', '_' or '-', not taken"
        data = {"datasets": dataset_choices(ui), "error": error}
        return render(request, "datasets.html", data, status_code=400)
    stored.put_dataset(ui.store, name, f"name: {name}\ncases: []\n")
    return RedirectResponse(f"/datasets/store:{name}", status_code=303)


async def dataset_page(request: Request) -> Response:
    """The cases of one dataset (validated by ``load_dataset``; an invalid file shows its
    error and the cases as written)."""
    source = _editable(request)
    if source is None:
        return not_found(request, f"no dataset {request.path_params['key']!r}")
    text = source.read(ui_of(request))
    error, cases = None, []
    try:
        dataset = validate(text, source.suffix, source.label)
        cases = [
            {"index": i, "id": c.id, "input": c.input, "tier": c.tier, "tags": c.tags}
            for i, c in enumerate(dataset.cases)
        ]
    except CaseError as exc:
        error = str(exc)
    data = {
        "source": source.key,
        "label": source.label,
        "cases": cases,
        "error": error,
        "version": digest(text),
    }
    return render(request, "dataset.html", data)


async def export_yaml(request: Request) -> Response:
    """The dataset's text as a YAML file to download (a stored dataset as ``NAME.yaml``: what
    ``tracegrade dataset export NAME`` writes)."""
    source = _editable(request)
    if source is None:
        return not_found(request, f"no dataset {request.path_params['key']!r}")
    filename = source.path.name if source.path is not None else f"{source.name}.yaml"
    return Response(
        source.read(ui_of(request)),
        media_type="application/yaml; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{quote(filename)}"'},
    )


async def _form_page(
    request: Request,
    source: EditableDataset,
    values: dict[str, str],
    *,
    action: str,
    version: str,
    error: CaseError | None = None,
) -> Response:
    """The case form; its tool fields as rows picked from the tools the stored traces called
    (:mod:`tracegrade.dataset.tool_form`; calls the rows cannot show stay YAML)."""
    blocks = call_rows(values.get("expected_tool_calls", ""))
    data = {
        "source": source.key,
        "label": source.label,
        "fields": FIELDS,
        "choices": CHOICES,
        "values": values,
        "action": action,
        "version": version,
        "error": None if error is None else str(error),
        "errors": {} if error is None else {k or "": v for k, v in error.errors.items()},
        "tool_rows": [*values.get("expected_tools", "").splitlines(), "", ""],
        "call_blocks": None if blocks is None else [*blocks, CallRow()],
        "operators": OPERATORS,
        "tools_seen": await ui_of(request).offload(tools_seen),
    }
    return render(request, "case_form.html", data, status_code=200 if error is None else 400)


def _submitted(form: FormData) -> dict[str, str]:
    """The form's text values, its tool rows turned into the text they stand for."""
    values = {k: str(v) for k, v in form.items()}
    values.update(collect({k: [str(v) for v in form.getlist(k)] for k in form}))
    return values


async def new_case_from_trace(request: Request) -> Response:
    """``?dataset=KEY&trace_id=ID`` (the trace page's form) -> that dataset's new-case form."""
    key = request.query_params.get("dataset") or ""
    if key not in editable_datasets(ui_of(request)):
        return not_found(request, f"no dataset {key!r}")
    trace_id = request.query_params.get("trace_id") or ""
    target = f"/datasets/{quote(key)}/cases/new?trace_id={quote(trace_id)}"
    if request.query_params.get("simulated"):
        target += "&simulated=1"
    return RedirectResponse(target, status_code=303)


async def new_case_form(request: Request) -> Response:
    """An empty case form, or prefilled from ``?trace_id=`` (a stored trace; with
    ``&simulated=1`` as a simulated user to review)."""
    source = _editable(request)
    if source is None:
        return not_found(request, f"no dataset {request.path_params['key']!r}")
    ui = ui_of(request)
    trace_id = request.query_params.get("trace_id")
    simulated = bool(request.query_params.get("simulated"))
    values = await ui.offload(case_from_trace, trace_id, simulated) if trace_id else {}
    version = digest(source.read(ui))
    action = f"/datasets/{source.key}/cases/new"
    return await _form_page(request, source, values, action=action, version=version)


async def edit_case_form(request: Request) -> Response:
    """The form of an existing case (its values as written in the dataset)."""
    source = _editable(request)
    if source is None:
        return not_found(request, f"no dataset {request.path_params['key']!r}")
    text = source.read(ui_of(request))
    index = int(request.path_params["index"])
    case = Document.parse(text, source.suffix).case(index)
    values = form_values(case)
    action = f"/datasets/{source.key}/cases/{index}"
    if request.url.path.endswith(".json"):
        return render(request, "case_form.html", {"values": values, "version": digest(text)})
    return await _form_page(request, source, values, action=action, version=digest(text))


async def _save(
    request: Request, form: FormData, change: Callable[[Document], Any], *, action: str
) -> Response:
    source = _editable(request)
    if source is None:
        return not_found(request, f"no dataset {request.path_params['key']!r}")
    ui = ui_of(request)
    submitted = _submitted(form)
    values = {name: submitted.get(name, "") for name, _, _ in FIELDS}
    values |= {f"{name}_as": submitted.get(f"{name}_as", "") for name in AS_YAML}
    text = source.read(ui)
    if form.get("version") != digest(text):
        error = CaseError("the dataset changed since this form was opened; reload it", None)
        return await _form_page(
            request, source, values, action=action, version=digest(text), error=error
        )
    try:
        new_text = _changed(text, source, change)
    except CaseError as exc:
        return await _form_page(
            request, source, values, action=action, version=digest(text), error=exc
        )
    source.write(ui, new_text)
    return RedirectResponse(f"/datasets/{source.key}", status_code=303)


def _changed(text: str, source: EditableDataset, change: Callable[[Document], Any]) -> str:
    """The dataset's text after ``change``, validated; the text itself when the change
    changes no case (a form saved unchanged leaves the file byte for byte: ids are not pinned).

    Raises:
        CaseError: the text does not parse, a form value cannot be parsed, or the result
            does not load (every problem in one message).
    """
    probe = Document.parse(text, source.suffix)
    changed = change(probe)  # a form's change returns the values it could not parse
    problems = changed if isinstance(changed, list) else []
    if not probe.changed and not problems:
        return text
    document = Document.parse(text, source.suffix)
    _pin_ids(document, text, source)
    change(document)
    new_text = document.dump()
    validate(new_text, source.suffix, source.label, problems)
    return new_text


def _pin_ids(document: Document, text: str, source: EditableDataset) -> None:
    """Pin the positional ids of the cases that have none (see :meth:`Document.pin_ids`)
    before a change; a dataset that does not load as it is has nothing to pin."""
    with contextlib.suppress(CaseError):
        document.pin_ids(validate(text, source.suffix, source.label))


def _values(form: FormData, document: Document, case: Any = None) -> dict[str, str]:
    """The form's values; a blank id keeps an existing ``case``'s id (none written: its
    positional id, pinned if the save changes anything), a new case gets a stable one."""
    values = _submitted(form)
    if not values.get("id", "").strip():
        first = values.get("input") or values.get("turns") or ""
        old_id = case.get("id") if case is not None else None
        values["id"] = str(old_id) if old_id else "" if case is not None else document.new_id(first)
    return values


@state_changing
async def create_case(request: Request, form: FormData) -> Response:
    """Append a case from the form (a blank id: one made from its input)."""

    def change(document: Document) -> list[str]:
        case = CommentedMap() if document.suffix not in (".json", ".jsonl") else {}
        problems = apply_form(case, _values(form, document))
        document.cases.append(case)
        return problems

    key = request.path_params["key"]
    return await _save(request, form, change, action=f"/datasets/{key}/cases/new")


@state_changing
async def update_case(request: Request, form: FormData) -> Response:
    """Write the form into an existing case (its other keys, comments and order kept)."""
    index = int(request.path_params["index"])

    def change(document: Document) -> list[str]:
        case = document.case(index)
        return apply_form(case, _values(form, document, case))

    key = request.path_params["key"]
    return await _save(request, form, change, action=f"/datasets/{key}/cases/{index}")


@state_changing
async def duplicate_case(request: Request, form: FormData) -> Response:
    """Insert a copy of a case after it."""
    index = int(request.path_params["index"])
    key = request.path_params["key"]
    return await _save(request, form, lambda d: d.duplicate(index), action=f"/datasets/{key}")


@state_changing
async def delete_case(request: Request, form: FormData) -> Response:
    """Remove a case."""
    index = int(request.path_params["index"])
    key = request.path_params["key"]
    return await _save(request, form, lambda d: d.delete(index), action=f"/datasets/{key}")


ROUTES = [
    *twin("/datasets", datasets_page),
    Route("/datasets/new-case", new_case_from_trace, methods=["GET"]),
    Route("/datasets", create_stored, methods=["POST"]),
    Route("/datasets/{key}/export.yaml", export_yaml, methods=["GET"]),
    Route("/datasets/{key}/cases/new", new_case_form, methods=["GET"]),
    Route("/datasets/{key}/cases/new", create_case, methods=["POST"]),
    Route("/datasets/{key}/cases/{index:int}.json", edit_case_form, methods=["GET"]),
    Route("/datasets/{key}/cases/{index:int}", edit_case_form, methods=["GET"]),
    Route("/datasets/{key}/cases/{index:int}", update_case, methods=["POST"]),
    Route("/datasets/{key}/cases/{index:int}/duplicate", duplicate_case, methods=["POST"]),
    Route("/datasets/{key}/cases/{index:int}/delete", delete_case, methods=["POST"]),
    *twin("/datasets/{key}", dataset_page),
]
