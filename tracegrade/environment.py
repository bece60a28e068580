"""Every environment variable tracegrade reads, or sets for an agent it runs, declared once
(as opentelemetry-python's ``sdk/environment_variables``): a constant and its docstring each.
A command-line option wins over its variable; a variable wins over the default.
"""

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

OTEL_EXPORTER_OTLP_PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
"""
.. envvar:: OTEL_EXPORTER_OTLP_PROTOCOL

The OpenTelemetry standard variable: ``http/protobuf`` (default) or ``grpc``, the protocol
of ``--export-otlp``.
"""

OTEL_EXPORTER_OTLP_LOGS_PROTOCOL = "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"
"""
.. envvar:: OTEL_EXPORTER_OTLP_LOGS_PROTOCOL

The protocol of the evaluation records alone (wins over :envvar:`OTEL_EXPORTER_OTLP_PROTOCOL`).
"""

OTEL_EXPORTER_OTLP_METRICS_PROTOCOL = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
"""
.. envvar:: OTEL_EXPORTER_OTLP_METRICS_PROTOCOL

The protocol of the figures alone (wins over :envvar:`OTEL_EXPORTER_OTLP_PROTOCOL`).
"""

OTEL_EXPORTER_OTLP_LOGS_ENDPOINT = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
"""
.. envvar:: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT

Where the evaluation records go instead of ``--export-otlp``'s URL (the full URL, with
``/v1/logs`` for OTLP/HTTP), as the OpenTelemetry SDK reads it.
"""

OTEL_EXPORTER_OTLP_METRICS_ENDPOINT = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
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
)
"""Every variable above, in the order the documentation lists them."""
