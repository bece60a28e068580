"""Evaluation results other evaluators recorded with stored traces: the
``gen_ai.evaluation.result`` log records the receiver stored (an online judge, end-user
feedback, a platform's scorers; tracegrade's own when ``--export-otlp`` points at a
tracegrade receiver), read by trace id (:mod:`tracegrade.normalize.evaluations` defines
the event and the :class:`Evaluation` shape)."""

from __future__ import annotations

from collections.abc import Iterable

from tracegrade.normalize.evaluations import Evaluation, evaluations_of
from tracegrade.store.traces import Store

__all__ = ["Evaluation", "evaluations_for"]


def evaluations_for(store: Store, trace_ids: Iterable[str]) -> dict[str, list[Evaluation]]:
    """The evaluation results recorded with each trace (trace id, lowercase hex -> its
    :class:`Evaluation` s, oldest first); a trace with none is absent. Reads the traces' log
    records only, never their spans.

    Raises:
        StoreError: the store cannot be read.
    """
    ids = [i.lower() for i in trace_ids]
    read = {trace_id: evaluations_of(logs) for trace_id, logs in store.log_records(ids).items()}
    return {trace_id: found for trace_id, found in read.items() if found}
