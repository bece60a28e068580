"""Retrieved documents in every shape the conventions record them, read into one model
(:class:`~tracegrade.trace.RetrievedDocument`).

Shapes understood by :func:`parse_document`:

- OpenInference, flattened and regrouped by :func:`~.messages.indexed`:
  ``retrieval.documents.N.document.{id, content, score, metadata}`` (``metadata`` a JSON
  string); the LangChain instrumentation records ``content`` and ``metadata`` only;
- GenAI semconv ``gen_ai.retrieval.documents`` items: ``{id, score, ...}`` where the schema
  allows extra properties, and emitters put the text under ``content`` (``text`` accepted);
- a LangChain ``Document`` serialised as ``{"page_content", "metadata", "id"?}`` (OpenLLMetry's
  ``vector_db_retrieve`` output) or by ``dumpd`` (``{"lc": 1, "kwargs": {"page_content"...}}``);
- a LlamaIndex ``NodeWithScore``: ``{"node": {"id_", "text", "metadata"}, "score"}``.

A document without an id of its own takes its metadata's ``id``, ``doc_id``, ``document_id``
or ``source`` (LangChain's OpenInference instrumentation drops ``Document.id``; applications
keep their own id in the metadata).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tracegrade.normalize.messages import as_text, indexed
from tracegrade.spans import loads_maybe
from tracegrade.trace import RetrievedDocument

_CONTENT_KEYS = ("content", "page_content", "text")
_ID_KEYS = ("id", "id_", "doc_id", "document_id")
_METADATA_IDS = ("id", "doc_id", "document_id", "source")


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return score if math.isfinite(score) else None


def _metadata(value: Any) -> dict[str, Any]:
    value = loads_maybe(value)
    return dict(value) if isinstance(value, Mapping) else {}


def _first(raw: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = raw.get(key)
        if value is not None and value != "":
            return value
    return None


def parse_document(raw: Any) -> RetrievedDocument | None:
    """One document from any shape of the module docstring (a JSON string is decoded); a
    plain string is a document's content; ``None`` for anything else."""
    raw = loads_maybe(raw)
    if isinstance(raw, str):
        return RetrievedDocument(None, raw) if raw.strip() else None
    if not isinstance(raw, Mapping):
        return None
    score = _score(raw.get("score"))
    if isinstance(raw.get("node"), Mapping):  # LlamaIndex NodeWithScore
        raw = raw["node"]
    elif isinstance(raw.get("document"), Mapping):  # OpenInference, regrouped
        raw = raw["document"]
    elif raw.get("lc") == 1 and isinstance(raw.get("kwargs"), Mapping):  # LangChain dumpd
        raw = raw["kwargs"]
    metadata = _metadata(raw.get("metadata"))
    content = _first(raw, _CONTENT_KEYS)
    identifier = _first(raw, _ID_KEYS)
    if identifier is None:
        identifier = _first(metadata, _METADATA_IDS)
    if score is None:
        score = _score(raw.get("score"))
    if content is None and identifier is None and score is None:
        return None
    return RetrievedDocument(
        None if identifier is None else str(identifier),
        as_text(content) if content is not None else None,
        score,
        metadata,
    )


def parse_documents(value: Any) -> list[RetrievedDocument] | None:
    """The documents of a list (or its JSON string), or of ``{"documents": [...]}``
    (OpenLLMetry's retriever output); ``None`` when ``value`` holds no list."""
    value = loads_maybe(value)
    if isinstance(value, Mapping) and isinstance(value.get("documents"), list):
        value = value["documents"]
    if not isinstance(value, (list, tuple)):
        return None
    return [d for d in map(parse_document, value) if d is not None]


def flattened_documents(attributes: Mapping[str, Any], prefix: str) -> list[RetrievedDocument]:
    """The documents under a flattened ``prefix`` (``retrieval.documents.``), in index order."""
    return [d for d in map(parse_document, indexed(attributes, prefix)) if d is not None]
