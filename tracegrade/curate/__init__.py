"""Golden datasets from real conversations (``tracegrade dataset build``): one case per
conversation with expectations derived from what its trace shows (:mod:`.derive`),
redacted (:mod:`.redact`), selected, de-duplicated and written (:mod:`.build`)."""

from tracegrade.curate.build import BuildOptions, BuildReport, build_dataset, write_dataset

__all__ = ["BuildOptions", "BuildReport", "build_dataset", "write_dataset"]
