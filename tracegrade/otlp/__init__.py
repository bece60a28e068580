"""Wire and file formats: OTLP protobuf and OTLP/JSON, the Collector's file exporter format,
chat transcripts and any-agent trace files, all decoded to :mod:`tracegrade.spans` objects.

:mod:`.codec` decodes and encodes OTLP messages; :mod:`.files` reads trace files of any
supported format; :mod:`.transcripts` and :mod:`.anyagent` turn records that are not OTLP
into OTLP requests through :mod:`.build`. Nothing here knows the store or scoring.
"""
