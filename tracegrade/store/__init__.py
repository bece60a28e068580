"""The store: the one place that owns SQL (SQLite by default, PostgreSQL by URL).

:mod:`.database` is the connection type over both engines; :mod:`.traces` holds raw spans
and log records (as received), schema and migrations; :mod:`.rows` turns OTLP requests into
rows; :mod:`.outbox` queues the traces to score in the same transaction, :mod:`.follow` holds
the workers' claims, results and windows (:mod:`.leases` renews a worker's claims while it
scores); :mod:`.partitions` stores spans and log records by
day on PostgreSQL, :mod:`.retention` removes old days; :mod:`.runs` stores scoring runs and
case results; :mod:`.judge_cache` the judge's verdict cache; :mod:`.feedback` end-user
feedback, :mod:`.review` review queues and labels, :mod:`.users` the dashboard's accounts.
"""

from tracegrade.store.traces import DEFAULT_DB, Store

__all__ = ["DEFAULT_DB", "Store"]
