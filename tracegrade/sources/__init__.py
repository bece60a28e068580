"""Pulling traces from where teams already keep them: Arize Phoenix, an MLflow tracking server,
Langfuse, Jaeger and Grafana Tempo (``tracegrade import --from SOURCE``).

One module per backend, each a client (:class:`~tracegrade.sources.base.Source`: find traces,
then fetch the new ones) that turns the backend's answers into OTLP trace requests with the
attributes the backend's spans carried, so the normaliser reads them as any other trace;
:mod:`.http` sends the requests (rate limits respected), :mod:`.otlp_json` reads the OTLP/JSON
variants the backends answer. Credentials come from each backend's own environment variables
and travel only in request headers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tracegrade._util.lazy_import import lazy
from tracegrade.errors import ConfigError

SOURCES: dict[str, tuple[str, str]] = {
    "phoenix": ("tracegrade.sources.phoenix", "PhoenixSource"),
    "mlflow": ("tracegrade.sources.mlflow", "MlflowSource"),
    "langfuse": ("tracegrade.sources.langfuse", "LangfuseSource"),
    "jaeger": ("tracegrade.sources.jaeger", "JaegerSource"),
    "tempo": ("tracegrade.sources.tempo", "TempoSource"),
}
"""Source name -> (module, client class). A new backend adds one entry and one module."""

_EXPORTS = {
    "Found": "tracegrade.sources.base",
    "PullQuery": "tracegrade.sources.base",
    "Settings": "tracegrade.sources.base",
    "Source": "tracegrade.sources.base",
    "SourceError": "tracegrade.sources.http",
}
__all__ = ["SOURCES", "Found", "PullQuery", "Settings", "Source", "SourceError", "open_source"]
__getattr__, __dir__ = lazy(_EXPORTS)


def open_source(name: str, url: str | None = None) -> Source:
    """The client of the backend ``name`` (a key of :data:`SOURCES`), its settings read from
    the environment (``url`` wins over it).

    Raises:
        ConfigError: an unknown name, a bad URL, a missing credential the backend requires.
    """
    if name not in SOURCES:
        raise ConfigError(f"unknown source {name!r}: use one of {', '.join(SOURCES)}")
    module_name, class_name = SOURCES[name]
    module = importlib.import_module(module_name)
    source: Source = getattr(module, class_name)(module.settings(url))
    return source


if TYPE_CHECKING:
    from tracegrade.sources.base import Found, PullQuery, Settings, Source
    from tracegrade.sources.http import SourceError
