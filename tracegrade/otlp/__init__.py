"""Wire and file formats: OTLP protobuf and OTLP/JSON, the Collector's file exporter format,
chat transcripts and any-agent trace files, all decoded to :mod:`tracegrade.spans` objects.

:mod:`.codec` decodes and encodes OTLP messages; :mod:`.files` reads trace files of any
supported format; :mod:`.transcripts` and :mod:`.anyagent` turn records that are not OTLP
into OTLP requests through :mod:`.build`. Nothing here knows the store or scoring.
"""

from typing import TYPE_CHECKING

from tracegrade._util.lazy_import import lazy

_EXPORTS = {
    "read_file": "tracegrade.otlp.files",
    "ReadOptions": "tracegrade.otlp.files",
    "Payloads": "tracegrade.otlp.files",
    "spans_from_request": "tracegrade.otlp.codec",
    "logs_from_request": "tracegrade.otlp.codec",
    "Redactor": "tracegrade.otlp.redaction",
}
__all__ = [
    "read_file",
    "ReadOptions",
    "Payloads",
    "spans_from_request",
    "logs_from_request",
    "Redactor",
]
__getattr__, __dir__ = lazy(_EXPORTS)

if TYPE_CHECKING:
    from tracegrade.otlp.codec import logs_from_request, spans_from_request
    from tracegrade.otlp.files import Payloads, ReadOptions, read_file
    from tracegrade.otlp.redaction import Redactor
