"""tracegrade: evaluate AI agents from their OpenTelemetry traces.

The trace is the only source of truth about what an agent did: tracegrade decodes OTLP
spans and log records, normalises them into an :class:`~tracegrade.trace.AgentTrace`
whatever instrumentation emitted them, and scores that.
"""

__version__ = "0.1.0"
