"""The OTLP receiver (``tracegrade collect``): gRPC and HTTP front ends over one export service.

:mod:`.admission` decodes, validates and redacts a request; :mod:`.ingest` queues admitted
requests for one writer that group-commits them to the store; :mod:`.service` maps outcomes
to OTLP status codes; :mod:`.grpc_front` and :mod:`.http_front` speak the two transports;
:mod:`.receiver` composes them. Nothing here scores or judges.
"""

from typing import TYPE_CHECKING

from tracegrade._util.lazy_import import lazy

_EXPORTS = {
    "Receiver": "tracegrade.collector.receiver",
    "ReceiverConfig": "tracegrade.collector.receiver",
}
__all__ = [
    "Receiver",
    "ReceiverConfig",
]
__getattr__, __dir__ = lazy(_EXPORTS)

if TYPE_CHECKING:
    from tracegrade.collector.receiver import Receiver, ReceiverConfig
