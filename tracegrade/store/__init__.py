"""The store: the one place that owns SQL (SQLite by default, PostgreSQL by URL).

:mod:`.database` is the connection type over both engines; :mod:`.traces` holds raw spans
and log records (as received), schema and migrations; :mod:`.rows` turns OTLP requests into
rows; :mod:`.runs` stores scoring runs and case results; :mod:`.judge_cache` the judge's
verdict cache; :mod:`.feedback` end-user feedback, :mod:`.review` review queues and labels,
:mod:`.users` the dashboard's accounts.
"""

from tracegrade.store.traces import DEFAULT_DB, Store

__all__ = ["DEFAULT_DB", "Store"]
