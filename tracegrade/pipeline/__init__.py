"""The use cases every face calls: read traces, score, run, follow, build a dataset, compare.

``tracegrade score``, ``tracegrade run``, the Python API (:func:`tracegrade.evaluate_dataset`),
the pytest plugin and the dashboard all go through these functions, so the same input gives
the same result on every face. A command parses its options, calls one function here and
renders what it returns.
"""
