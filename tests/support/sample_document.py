"""A small run document as plain JSON values: two case entries with every awkward value (non-ASCII
ids, quotes and newlines, None, nested details) and its head, for tests of the written document."""

# Fields in the document's order (the order a written entry has).
CASES = [
    {"case_id": "é-1", "trace_id": "t1", "passed": False, "score": 0.25, "scores": {"a": None},
     "reasons": ["broke \"quoted\"\nline"], "hard_failures": [], "usage": None, "details": {}},
    {"case_id": None, "trace_id": None, "passed": True, "score": None, "scores": {},
     "reasons": [], "hard_failures": ["x"], "usage": {"duration_ms": 1234.5},
     "details": {"k": {"v": [1, 2.5, {}]}}},
]  # fmt: skip
DOC = {
    "schema_version": "tracegrade.run/1",
    "run": {"run_id": "r1", "created_at": "2026-01-01T00:00:00+00:00", "dataset": None},
    "summary": {"results": 2, "failed": 1, "score": 0.25, "threshold": 0.7, "axes": {}},
}
