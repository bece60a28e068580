"""Small in-process agents for edge cases of ``tracegrade run`` (the shop agent covers the
normal path)."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from tests.runner.shop_agent import answer


def interrupting(message: str) -> str:
    """Answers like the shop agent, but a message starting with STOP presses Ctrl-C first."""
    if message.startswith("STOP"):
        os.kill(os.getpid(), signal.SIGINT)
    return answer(message)


def raising(message: str) -> str:
    """Raises for a message starting with BOOM, else answers like the shop agent."""
    if message.startswith("BOOM"):
        raise ValueError("the catalogue is on fire")
    return answer(message)


def conversation_only(messages: Sequence[dict[str, str]]) -> str:
    """Annotated to take the conversation: answers like the shop agent."""
    assert isinstance(messages, list), messages
    return answer(messages)
