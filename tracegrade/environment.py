"""Every environment variable tracegrade reads, or sets for an agent it runs, declared once
(as opentelemetry-python's ``sdk/environment_variables``): a constant and its docstring each.
A command-line option wins over its variable; a variable wins over the default. The
OpenTelemetry SDK's own variables are its constants (``opentelemetry.sdk.environment_variables``).
"""

from opentelemetry.sdk import environment_variables

TRACEGRADE_DB = "TRACEGRADE_DB"
"""
.. envvar:: TRACEGRADE_DB

The trace store: a SQLite file path or a ``postgresql://`` URL (``--db``). Default
``.tracegrade/tracegrade.db`` under the current directory.
"""

TRACEGRADE_CONFIG = "TRACEGRADE_CONFIG"
"""
.. envvar:: TRACEGRADE_CONFIG

The config file (``--config``). Default ``./tracegrade.yaml`` when it exists.
"""

TRACEGRADE_CONVENTIONS = "TRACEGRADE_CONVENTIONS"
"""
.. envvar:: TRACEGRADE_CONVENTIONS

Convention map files to read traces with, before the built-in maps (``tracegrade
--conventions FILE``), separated by ``:`` (``;`` on Windows): a map of an in-house tracer's
attributes, no code (see the conventions guide).
"""

TRACEGRADE_SQLITE_SYNC = "TRACEGRADE_SQLITE_SYNC"
"""
.. envvar:: TRACEGRADE_SQLITE_SYNC

SQLite's ``synchronous`` setting for the store: ``NORMAL`` (default, WAL: a power loss may
roll back the last commits) or ``FULL`` (every commit fsynced).
"""

TRACEGRADE_TOKEN = "TRACEGRADE_TOKEN"
"""
.. envvar:: TRACEGRADE_TOKEN

Bearer token the receiver (``tracegrade collect --token``) requires of OTLP exporters.
"""

TRACEGRADE_FEEDBACK_ATTRIBUTE = "TRACEGRADE_FEEDBACK_ATTRIBUTE"
"""
.. envvar:: TRACEGRADE_FEEDBACK_ATTRIBUTE

The span attribute the receiver and ``import`` read as end-user feedback
(``--feedback-attribute``; default ``user.feedback``; empty: none).
"""

TRACEGRADE_REVIEWER = "TRACEGRADE_REVIEWER"
"""
.. envvar:: TRACEGRADE_REVIEWER

Who labels and promotes with ``tracegrade review`` (``--reviewer``; default the login name).
"""

TRACEGRADE_UI_TOKEN = "TRACEGRADE_UI_TOKEN"
"""
.. envvar:: TRACEGRADE_UI_TOKEN

Token the dashboard (``tracegrade ui --token``) requires; needed to bind beyond loopback.
"""

TRACEGRADE_ALERT_WEBHOOK = "TRACEGRADE_ALERT_WEBHOOK"
"""
.. envvar:: TRACEGRADE_ALERT_WEBHOOK

URL alerts are POSTed to (``--alert-webhook``): regressions against a baseline, window
thresholds of ``score --follow --window``. Slack-compatible JSON (``text``).
"""

TRACEGRADE_EXPORT_OTLP = "TRACEGRADE_EXPORT_OTLP"
"""
.. envvar:: TRACEGRADE_EXPORT_OTLP

OTLP endpoint (base URL) that ``score``, ``run`` and ``score --follow`` send their
``gen_ai.evaluation.result`` records and figures to (``--export-otlp``). The OpenTelemetry
SDK's exporters read the rest of their settings from the standard ``OTEL_EXPORTER_OTLP_*``
variables (headers, timeout, certificates, compression): see ``docs/guides/otlp-export.md``.
"""

OTEL_EXPORTER_OTLP_PROTOCOL = environment_variables.OTEL_EXPORTER_OTLP_PROTOCOL
"""
.. envvar:: OTEL_EXPORTER_OTLP_PROTOCOL

The OpenTelemetry standard variable: ``http/protobuf`` (default) or ``grpc``, the protocol
of ``--export-otlp``.
"""

OTEL_EXPORTER_OTLP_LOGS_PROTOCOL = environment_variables.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL
"""
.. envvar:: OTEL_EXPORTER_OTLP_LOGS_PROTOCOL

The protocol of the evaluation records alone (wins over :envvar:`OTEL_EXPORTER_OTLP_PROTOCOL`).
"""

OTEL_EXPORTER_OTLP_METRICS_PROTOCOL = environment_variables.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL
"""
.. envvar:: OTEL_EXPORTER_OTLP_METRICS_PROTOCOL

The protocol of the figures alone (wins over :envvar:`OTEL_EXPORTER_OTLP_PROTOCOL`).
"""

OTEL_EXPORTER_OTLP_LOGS_ENDPOINT = environment_variables.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT
"""
.. envvar:: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT

Where the evaluation records go instead of ``--export-otlp``'s URL (the full URL, with
``/v1/logs`` for OTLP/HTTP), as the OpenTelemetry SDK reads it.
"""

OTEL_EXPORTER_OTLP_METRICS_ENDPOINT = environment_variables.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT
"""
.. envvar:: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT

Where the figures go instead of ``--export-otlp``'s URL (the full URL, with ``/v1/metrics``
for OTLP/HTTP), e.g. a Prometheus server's OTLP endpoint.
"""

TRACEGRADE_JUDGE_MODEL = "TRACEGRADE_JUDGE_MODEL"
"""
.. envvar:: TRACEGRADE_JUDGE_MODEL

The LLM judge's model (``--judge-model``; a case's ``judge.model`` wins). Default ``gpt-4o``.
"""

TRACEGRADE_JUDGE_BASE_URL = "TRACEGRADE_JUDGE_BASE_URL"
"""
.. envvar:: TRACEGRADE_JUDGE_BASE_URL

Base URL of the judge's OpenAI-compatible endpoint; falls back to :envvar:`OPENAI_BASE_URL`.
"""

TRACEGRADE_JUDGE_API_KEY = "TRACEGRADE_JUDGE_API_KEY"
"""
.. envvar:: TRACEGRADE_JUDGE_API_KEY

API key of the judge's endpoint; falls back to :envvar:`OPENAI_API_KEY`.
"""

TRACEGRADE_SIMULATOR_MODEL = "TRACEGRADE_SIMULATOR_MODEL"
"""
.. envvar:: TRACEGRADE_SIMULATOR_MODEL

The simulated users' model in ``tracegrade run`` (``--simulator-model``); default the judge's
model. Reached at the judge's endpoint with the judge's key.
"""

OPENAI_BASE_URL = "OPENAI_BASE_URL"
"""
.. envvar:: OPENAI_BASE_URL

The ``openai`` client's own base URL, used by the judge when
:envvar:`TRACEGRADE_JUDGE_BASE_URL` is not set.
"""

OPENAI_API_KEY = "OPENAI_API_KEY"
"""
.. envvar:: OPENAI_API_KEY

The ``openai`` client's own key, used by the judge when :envvar:`TRACEGRADE_JUDGE_API_KEY`
is not set.
"""

GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
"""
.. envvar:: GITHUB_STEP_SUMMARY

Set by GitHub Actions: ``score``/``run``/``compare`` append their Markdown summary to it.
"""

GITHUB_HEAD_REF = "GITHUB_HEAD_REF"
"""
.. envvar:: GITHUB_HEAD_REF

Set by GitHub Actions on pull requests: the run's branch (else :envvar:`GITHUB_REF_NAME`).
"""

GITHUB_REF_NAME = "GITHUB_REF_NAME"
"""
.. envvar:: GITHUB_REF_NAME

Set by GitHub Actions: the run's branch or tag, recorded with the run.
"""

TRACEGRADE_CONVERSATION_ID = "TRACEGRADE_CONVERSATION_ID"
"""
.. envvar:: TRACEGRADE_CONVERSATION_ID

Set by ``tracegrade run`` for an ``--agent-cmd`` process (and a ``--revive-cmd``): the id of
the conversation the turn belongs to, the same across agent revivals (also ``{conversation_id}``
in the command and ``tracegrade.conversation_id`` in ``OTEL_RESOURCE_ATTRIBUTES``).
"""

TRACEGRADE_REVIVED = "TRACEGRADE_REVIVED"
"""
.. envvar:: TRACEGRADE_REVIVED

Set by ``tracegrade run`` to ``1`` for an ``--agent-cmd`` process (and a ``--revive-cmd``) of
a session that follows an agent revival: the agent must restore the conversation from its own
storage (it gets only the messages from the revived turn on).
"""

COLUMNS = "COLUMNS"
"""
.. envvar:: COLUMNS

The width of the terminal report, in columns. Default: the terminal's width in a terminal,
160 when the output is a pipe, a file or a CI log
(:data:`tracegrade.report.terminal.PIPE_WIDTH`).
"""

# --- trace backends (tracegrade import --from): each backend's own client variables, read as
# its own client reads them (tracegrade.sources), and tracegrade's for those that have none.

PHOENIX_BASE_URL = "PHOENIX_BASE_URL"
"""
.. envvar:: PHOENIX_BASE_URL

Arize Phoenix's server (``--from phoenix``), as Phoenix's client reads it; else
:envvar:`PHOENIX_COLLECTOR_ENDPOINT`; default ``http://localhost:6006``.
"""

PHOENIX_COLLECTOR_ENDPOINT = "PHOENIX_COLLECTOR_ENDPOINT"
"""
.. envvar:: PHOENIX_COLLECTOR_ENDPOINT

Arize Phoenix's server when :envvar:`PHOENIX_BASE_URL` is not set (``/v1/traces`` dropped).
"""

PHOENIX_API_KEY = "PHOENIX_API_KEY"
"""
.. envvar:: PHOENIX_API_KEY

Arize Phoenix's API key, sent as a bearer token (never printed, never stored).
"""

PHOENIX_CLIENT_HEADERS = "PHOENIX_CLIENT_HEADERS"
"""
.. envvar:: PHOENIX_CLIENT_HEADERS

Extra headers for Arize Phoenix, ``name=value,name=value`` (never printed, never stored).
"""

PHOENIX_PROJECT_NAME = "PHOENIX_PROJECT_NAME"
"""
.. envvar:: PHOENIX_PROJECT_NAME

The Phoenix project read when ``--project`` is not given; default ``default``.
"""

MLFLOW_TRACKING_URI = "MLFLOW_TRACKING_URI"
"""
.. envvar:: MLFLOW_TRACKING_URI

The MLflow tracking server (``--from mlflow``); default ``http://localhost:5000``.
"""

MLFLOW_TRACKING_TOKEN = "MLFLOW_TRACKING_TOKEN"
"""
.. envvar:: MLFLOW_TRACKING_TOKEN

MLflow bearer token (never printed, never stored); else :envvar:`MLFLOW_TRACKING_USERNAME`.
"""

MLFLOW_TRACKING_USERNAME = "MLFLOW_TRACKING_USERNAME"
"""
.. envvar:: MLFLOW_TRACKING_USERNAME

MLflow basic-auth user, with :envvar:`MLFLOW_TRACKING_PASSWORD`.
"""

MLFLOW_TRACKING_PASSWORD = "MLFLOW_TRACKING_PASSWORD"
"""
.. envvar:: MLFLOW_TRACKING_PASSWORD

MLflow basic-auth password (never printed, never stored).
"""

MLFLOW_EXPERIMENT_ID = "MLFLOW_EXPERIMENT_ID"
"""
.. envvar:: MLFLOW_EXPERIMENT_ID

The MLflow experiment read when ``--project`` is not given; else
:envvar:`MLFLOW_EXPERIMENT_NAME`; default experiment ``0``.
"""

MLFLOW_EXPERIMENT_NAME = "MLFLOW_EXPERIMENT_NAME"
"""
.. envvar:: MLFLOW_EXPERIMENT_NAME

The MLflow experiment, by name, when neither ``--project`` nor :envvar:`MLFLOW_EXPERIMENT_ID`
is given.
"""

LANGFUSE_HOST = "LANGFUSE_HOST"
"""
.. envvar:: LANGFUSE_HOST

Langfuse (``--from langfuse``); else :envvar:`LANGFUSE_BASE_URL`; default
``https://cloud.langfuse.com``.
"""

LANGFUSE_BASE_URL = "LANGFUSE_BASE_URL"
"""
.. envvar:: LANGFUSE_BASE_URL

Langfuse, when :envvar:`LANGFUSE_HOST` is not set.
"""

LANGFUSE_PUBLIC_KEY = "LANGFUSE_PUBLIC_KEY"
"""
.. envvar:: LANGFUSE_PUBLIC_KEY

Langfuse public key (basic-auth user; required by ``--from langfuse``).
"""

LANGFUSE_SECRET_KEY = "LANGFUSE_SECRET_KEY"
"""
.. envvar:: LANGFUSE_SECRET_KEY

Langfuse secret key (basic-auth password; required; never printed, never stored).
"""

TRACEGRADE_JAEGER_URL = "TRACEGRADE_JAEGER_URL"
"""
.. envvar:: TRACEGRADE_JAEGER_URL

Jaeger's query service (``--from jaeger``); default ``http://localhost:16686``.
"""

TRACEGRADE_JAEGER_TOKEN = "TRACEGRADE_JAEGER_TOKEN"
"""
.. envvar:: TRACEGRADE_JAEGER_TOKEN

Bearer token for a Jaeger query service behind an authenticating proxy (never printed).
"""

TRACEGRADE_TEMPO_URL = "TRACEGRADE_TEMPO_URL"
"""
.. envvar:: TRACEGRADE_TEMPO_URL

Grafana Tempo's query frontend (``--from tempo``); default ``http://localhost:3200``.
"""

TRACEGRADE_TEMPO_TOKEN = "TRACEGRADE_TEMPO_TOKEN"
"""
.. envvar:: TRACEGRADE_TEMPO_TOKEN

Bearer token for Grafana Tempo (never printed, never stored).
"""

TRACEGRADE_TEMPO_TENANT = "TRACEGRADE_TEMPO_TENANT"
"""
.. envvar:: TRACEGRADE_TEMPO_TENANT

Grafana Tempo tenant, sent as ``X-Scope-OrgID``.
"""

VARIABLES: tuple[str, ...] = (
    TRACEGRADE_DB,
    TRACEGRADE_CONFIG,
    TRACEGRADE_CONVENTIONS,
    TRACEGRADE_SQLITE_SYNC,
    TRACEGRADE_TOKEN,
    TRACEGRADE_UI_TOKEN,
    TRACEGRADE_ALERT_WEBHOOK,
    TRACEGRADE_EXPORT_OTLP,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    TRACEGRADE_JUDGE_MODEL,
    TRACEGRADE_JUDGE_BASE_URL,
    TRACEGRADE_JUDGE_API_KEY,
    TRACEGRADE_SIMULATOR_MODEL,
    OPENAI_BASE_URL,
    OPENAI_API_KEY,
    GITHUB_STEP_SUMMARY,
    GITHUB_HEAD_REF,
    GITHUB_REF_NAME,
    TRACEGRADE_CONVERSATION_ID,
    TRACEGRADE_REVIVED,
    COLUMNS,
    PHOENIX_BASE_URL,
    PHOENIX_COLLECTOR_ENDPOINT,
    PHOENIX_API_KEY,
    PHOENIX_CLIENT_HEADERS,
    PHOENIX_PROJECT_NAME,
    MLFLOW_TRACKING_URI,
    MLFLOW_TRACKING_TOKEN,
    MLFLOW_TRACKING_USERNAME,
    MLFLOW_TRACKING_PASSWORD,
    MLFLOW_EXPERIMENT_ID,
    MLFLOW_EXPERIMENT_NAME,
    LANGFUSE_HOST,
    LANGFUSE_BASE_URL,
    LANGFUSE_PUBLIC_KEY,
    LANGFUSE_SECRET_KEY,
    TRACEGRADE_JAEGER_URL,
    TRACEGRADE_JAEGER_TOKEN,
    TRACEGRADE_TEMPO_URL,
    TRACEGRADE_TEMPO_TOKEN,
    TRACEGRADE_TEMPO_TENANT,
)
"""Every variable above, in the order the documentation lists them."""
