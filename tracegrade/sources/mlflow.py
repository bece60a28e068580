"""An MLflow tracking server: traces through its traces API (v3), spans as OTLP with MLflow's
own span attributes as they are (``mlflow.spanType``, ``mlflow.spanInputs``,
``mlflow.spanOutputs``, ``mlflow.traceRequestId``, and whatever the instrumentation set).

Endpoints (the REST store of the ``mlflow`` client, ``mlflow/store/tracking/rest_store.py``):

- ``POST /api/3.0/mlflow/traces/search`` lists an experiment's traces (``locations``,
  ``filter``: MLflow's trace filter, e.g. ``trace.status = 'OK'`` for ``--search``, joined
  with the time range as ``trace.timestamp_ms``; ``order_by``; ``page_token`` paging);
- ``GET /api/3.0/mlflow/traces/get?trace_id=tr-…`` one trace with its spans, OpenTelemetry
  ``Span`` messages in protobuf's JSON mapping (base64 ids).

MLflow keeps every attribute value as JSON and answers it decoded: an object or a list of
objects comes back as a key-value list, and is turned back into the JSON string MLflow kept
(as OpenInference and GenAI semconv carry such content). MLflow keeps no resource; the
``service.name`` it records as a trace tag becomes the resource's again.

Settings, as MLflow's client reads them: ``MLFLOW_TRACKING_URI`` (default
``http://localhost:5000``), ``MLFLOW_TRACKING_TOKEN`` (a bearer token) or
``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` (basic auth),
``MLFLOW_EXPERIMENT_ID`` or ``MLFLOW_EXPERIMENT_NAME`` (``--project``: an id or a name;
default the experiment ``0``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

from tracegrade import environment
from tracegrade.otlp.codec import ExportTraceServiceRequest, decode_any_value
from tracegrade.sources.base import Found, PullQuery, Settings, base_url, env, unix_nano
from tracegrade.sources.http import ApiClient, SourceError
from tracegrade.sources.otlp_json import request_of_spans

NAME = "mlflow"
DEFAULT_URL = "http://localhost:5000"
SEARCH_PATH = "/api/3.0/mlflow/traces/search"
GET_PATH = "/api/3.0/mlflow/traces/get"


def settings(url: str | None = None) -> Settings:
    """The server and credentials from the environment (module docstring); ``url`` wins."""
    headers = {}
    if token := env([environment.MLFLOW_TRACKING_TOKEN]):
        headers["Authorization"] = f"Bearer {token}"
    elif (user := env([environment.MLFLOW_TRACKING_USERNAME])) is not None:
        secret = f"{user}:{env([environment.MLFLOW_TRACKING_PASSWORD]) or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(secret).decode()
    return Settings(base_url(url, [environment.MLFLOW_TRACKING_URI], DEFAULT_URL), headers)


def time_filter(query: PullQuery) -> str | None:
    """MLflow's filter string for the query's time range and ``search`` (joined by AND)."""
    parts = []
    if query.since_unix_nano is not None:
        parts.append(f"trace.timestamp_ms >= {query.since_unix_nano // 1_000_000}")
    if query.until_unix_nano is not None:
        parts.append(f"trace.timestamp_ms < {-(-query.until_unix_nano // 1_000_000)}")
    if query.search:
        parts.append(query.search)
    return " AND ".join(parts) or None


class MlflowSource:
    """An MLflow tracking server's traces (see the module docstring)."""

    name = NAME

    def __init__(self, settings: Settings, client: ApiClient | None = None):
        self.settings = settings
        self.client = client or ApiClient("MLflow", settings)

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def experiment_id(self, project: str | None) -> str:
        """The experiment to read: ``project`` (an id, or a name looked up), else the
        environment's, else ``0``.

        Raises:
            SourceError: no experiment of that name.
        """
        given = project or env([environment.MLFLOW_EXPERIMENT_ID])
        if given and given.isdigit():
            return given
        name = given or env([environment.MLFLOW_EXPERIMENT_NAME])
        if not name:
            return "0"
        answer = self.client.get(
            "/api/2.0/mlflow/experiments/get-by-name", {"experiment_name": name}
        )
        return str(answer["experiment"]["experiment_id"])

    def find(self, query: PullQuery) -> Iterator[list[Found]]:
        """Traces by timestamp, oldest first; ``query.trace_ids`` as given (with or without
        MLflow's ``tr-`` prefix)."""
        if query.trace_ids:
            yield [_found(t) for t in query.trace_ids]
            return
        body: dict[str, Any] = {
            "locations": [
                {
                    "type": "MLFLOW_EXPERIMENT",
                    "mlflow_experiment": {"experiment_id": self.experiment_id(query.project)},
                }
            ],
            "max_results": query.page_size,
            "order_by": ["timestamp_ms ASC"],
        }
        if (filter_string := time_filter(query)) is not None:
            body["filter"] = filter_string
        while True:
            page = self.client.post(SEARCH_PATH, body) or {}
            yield [
                _found(t["trace_id"], unix_nano(t.get("request_time")))
                for t in page.get("traces") or []
            ]
            if not page.get("next_page_token"):
                return
            body["page_token"] = page["next_page_token"]

    def fetch(self, found: Sequence[Found]) -> list[ExportTraceServiceRequest]:
        """Each trace with its spans, one OTLP request per trace."""
        requests = []
        for trace in found:
            answer = self.client.get(GET_PATH, {"trace_id": trace.key}) or {}
            spans = (answer.get("trace") or {}).get("spans") or []
            if not spans:
                continue
            tags = ((answer.get("trace") or {}).get("trace_info") or {}).get("tags") or {}
            resource = (
                {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
                if (service := tags.get("service.name"))
                else None
            )
            request = request_of_spans(spans, f"MLflow {GET_PATH}", resource=resource)
            _restore_json_attributes(request)
            requests.append(request)
        return requests


def _found(mlflow_id: str, start_unix_nano: int = 0) -> Found:
    hex_id = mlflow_id.removeprefix("tr-")
    if len(hex_id) != 32:
        raise SourceError(f"MLflow trace id {mlflow_id!r} is not tr- and 32 hex digits")
    return Found(hex_id.lower(), start_unix_nano, f"tr-{hex_id.lower()}")


def _restore_json_attributes(request: ExportTraceServiceRequest) -> None:
    """Objects MLflow answered decoded back into the JSON strings it kept (module docstring)."""
    for group in request.resource_spans:
        for scope_spans in group.scope_spans:
            for span in scope_spans.spans:
                for attribute in span.attributes:
                    if _structured(attribute.value):
                        decoded = decode_any_value(attribute.value)
                        attribute.value.string_value = json.dumps(decoded, ensure_ascii=False)


def _structured(value: Any) -> bool:
    kind = value.WhichOneof("value")
    if kind == "kvlist_value":
        return True
    if kind == "array_value":
        return any(
            v.WhichOneof("value") in ("kvlist_value", "array_value")
            for v in value.array_value.values
        )
    return False
