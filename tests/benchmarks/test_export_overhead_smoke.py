"""Smoke run of ``benchmarks/export_overhead.py`` (the ratio is measured by hand, not asserted:
CI only checks that every mode runs, the exporting ones deliver every record, and the exit
code is the same in every mode)."""

from __future__ import annotations

from benchmarks import export_overhead


def test_export_overhead_reports_every_mode():
    figures = export_overhead.run(repeat=1, traces=3)
    modes = figures["modes"]
    assert set(modes) == {"plain", "http", "grpc", "dead"}
    assert all(m["median_s"] > 0 and m["x_plain"] > 0 for m in modes.values())
    assert len({tuple(m["exit_codes"]) for m in modes.values()}) == 1
    [stored] = modes["http"]["records_stored"]
    assert modes["grpc"]["records_stored"] == [stored] and stored % 3 == 0 and stored > 3
    assert modes["dead"]["warnings"] == 1 and modes["http"]["warnings"] == 0
