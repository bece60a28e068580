"""The attribute names tracegrade itself defines (``tracegrade.*``).

Every layer may import this module; it imports nothing. The runner sets the first ones
(on its case span, or through ``OTEL_RESOURCE_ATTRIBUTES`` / W3C baggage for agents in other
processes), the store indexes the first two, and scoring matches traces to cases by
:data:`CASE_ID_ATTR`. What ``--export-otlp`` sends carries them too: its
``gen_ai.evaluation.result`` log records the run, case, repeat, dataset and verdict; its
metric data points the dataset, service, window and axis
(:mod:`tracegrade.report.evaluation_signals`).
"""

from __future__ import annotations

RUNNER_SCOPE = "tracegrade.runner"
"""The instrumentation scope of the spans ``tracegrade run`` records itself: a case span
(``tracegrade case <id>``) is the root of an in-process or ``--agent-url`` agent's trace, and
the agent's own spans are its children (latency is read from those: a production trace of the
same agent has no case span)."""
RUN_ID_ATTR = "tracegrade.run_id"
"""The eval run a trace belongs to (span or resource attribute; a string)."""
CASE_ID_ATTR = "tracegrade.case_id"
"""The golden case a trace answers (span or resource attribute; a string)."""
REPEAT_ATTR = "tracegrade.repeat"
"""Which repeat (1-based) of a case a case span is (span attribute; an int)."""
CONVERSATION_ID_ATTR = "tracegrade.conversation_id"
"""The conversation an eval run's attempt holds with the agent (resource attribute or W3C
baggage; a string). Kept across agent revivals: a revived agent restores the conversation by
it. The runner's case span carries it as ``gen_ai.conversation.id``."""
REVIVAL_ATTR = "tracegrade.revival"
"""Which revival (1-based) of the agent a session follows (span or resource attribute, W3C
baggage; an int); absent on an attempt's first session."""
TIMING_ATTR = "tracegrade.timing"
"""``"synthetic"`` on the root span of a trace built from a transcript, whose times are made up."""
DATASET_ATTR = "tracegrade.dataset"
"""The golden dataset's name (exported records and metric data points; a string)."""
VERDICT_ATTR = "tracegrade.verdict"
"""The case's verdict, ``pass`` or ``fail``, on each of its exported evaluation records; it
marks them as tracegrade's own, which a tracegrade receiver never stores as feedback."""
SERVICE_ATTR = "tracegrade.service"
"""The evaluated agent's ``service.name`` on a window's metric data points."""
WINDOW_ATTR = "tracegrade.window"
"""A window's length on its metric data points: seconds with an ``s``, e.g. ``300s``."""
AXIS_ATTR = "tracegrade.axis"
"""The scoring axis (``groundedness``, ``correctness``...) of an axis-mean data point."""
SIMULATED_CASE_ATTR = "tracegrade.simulated_user.case_id"
"""The case whose simulated user a trace of the simulator's own calls belongs to (root span
attribute; a string). Never :data:`CASE_ID_ATTR`: the simulator's trace is not the agent's,
and no case is matched to it."""
SIMULATOR_SERVICE = "tracegrade-simulated-user"
"""The ``service.name`` of the simulated user's own spans."""
WINDOW_START_ATTR = "tracegrade.window.start"
"""A window's start (ISO 8601, UTC) on its metric data points: a revised window's figures
carry the same start as its first ones."""
EVALUATOR_ID_ATTR = "tracegrade.evaluator.id"
"""The evaluator that produced a result (``ev-`` and 16 hex digits: the scorers and their
versions, the dataset and config fingerprints, tracegrade's version)."""
VERSION_ATTR = "tracegrade.version"
"""tracegrade's version, on each exported evaluation record."""
DATASET_FINGERPRINT_ATTR = "tracegrade.dataset.fingerprint"
"""The golden dataset's content fingerprint (16 hex digits)."""
CONFIG_FINGERPRINT_ATTR = "tracegrade.config.fingerprint"
"""The scoring configuration's fingerprint (16 hex digits)."""
RESULT_ID_ATTR = "tracegrade.result.id"
"""The identity of a result (32 hex digits): the same evaluator on the same trace and case
gives the same id, so a re-scored trace's records replace the earlier ones in a backend."""
RESULT_VERSION_ATTR = "tracegrade.result.version"
"""Which version of its trace a result scored (an int: late spans make a new version); the
highest is the current result."""
SKIPPED_ATTR = "tracegrade.skipped"
"""Why an evaluation was skipped (``judge_budget``: the judge budget was spent)."""
SESSION_ATTR = "tracegrade.session"
"""The conversation a conversation-level result scored (``id:<conversation id>`` or
``trace:<first trace id>``)."""
ATTRIBUTE_PREFIX = "tracegrade."
"""Every attribute above starts with this."""
