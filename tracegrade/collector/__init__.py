"""The OTLP receiver (``tracegrade collect``): gRPC and HTTP front ends over one export service.

:mod:`.admission` decodes, validates and redacts a request; :mod:`.ingest` queues admitted
requests for one writer that group-commits them to the store; :mod:`.service` maps outcomes
to OTLP status codes; :mod:`.grpc_front` and :mod:`.http_front` speak the two transports;
:mod:`.receiver` composes them. Nothing here scores or judges.
"""
