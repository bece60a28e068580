"""The three kinds of agent ``tracegrade run`` drives, and how each is linked to its case.

Correlation is always through OpenTelemetry, never through what the agent returns (the reply
only drives the conversation: the next turn and clarification follow-ups):

- :class:`PythonAgent` (``--agent module:function``, :mod:`.python`): the runner starts a root
  span per attempt and makes it current while the function runs, so the agent's spans are its
  children.
- :class:`CommandAgent` (``--agent-cmd "..."``, any language, :mod:`.command`): one process per
  turn, with the OTLP exporter environment pointing at the receiver and the run and case ids in
  ``OTEL_RESOURCE_ATTRIBUTES``.
- :class:`HttpAgent` (``--agent-url``, a running service, :mod:`.http`): one POST per turn with
  W3C ``traceparent`` (the runner's root span of the attempt) and ``baggage`` (run and case ids).

:mod:`.base` holds what they share: :class:`Agent`, :class:`Session`, :class:`Attempt`,
:class:`AgentFailure`, :data:`Message`. Each module's docstring details its agent's contract.
:mod:`.options` builds the agent a run drives (:class:`AgentOptions`, :func:`make_agent`).
"""

from tracegrade.runner.agents.base import (
    PLACEHOLDER,
    STDERR_TAIL_CHARS,
    Agent,
    AgentFailure,
    Attempt,
    Message,
    Session,
    placeholder_values,
    reply_text,
    tail,
)
from tracegrade.runner.agents.command import CommandAgent, InputFormat, OtlpProtocol
from tracegrade.runner.agents.http import (
    DEFAULT_BODY,
    REPLY_FIELDS,
    HttpAgent,
    parse_body,
    render_body,
    reply_from_response,
)
from tracegrade.runner.agents.options import AgentOptions, make_agent
from tracegrade.runner.agents.python import (
    ArgumentKind,
    PythonAgent,
    argument_kind,
    load_function,
)

__all__ = [
    "DEFAULT_BODY",
    "PLACEHOLDER",
    "REPLY_FIELDS",
    "STDERR_TAIL_CHARS",
    "Agent",
    "AgentFailure",
    "AgentOptions",
    "ArgumentKind",
    "Attempt",
    "CommandAgent",
    "HttpAgent",
    "InputFormat",
    "Message",
    "OtlpProtocol",
    "PythonAgent",
    "Session",
    "argument_kind",
    "load_function",
    "make_agent",
    "parse_body",
    "placeholder_values",
    "render_body",
    "reply_from_response",
    "reply_text",
    "tail",
]
