"""The span and resource attribute names tracegrade itself defines (``tracegrade.*``).

Every layer may import this module; it imports nothing. The runner sets these attributes
(on its case span, or through ``OTEL_RESOURCE_ATTRIBUTES`` / W3C baggage for agents in other
processes), the store indexes the first two, and scoring matches traces to cases by
:data:`CASE_ID_ATTR`.
"""

from __future__ import annotations

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
ATTRIBUTE_PREFIX = "tracegrade."
"""Every attribute above starts with this."""
