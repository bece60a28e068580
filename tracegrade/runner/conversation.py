"""One conversation with the agent: the case's turns in order, and clarification follow-ups.

A case with ``turns`` sends each user message in order within one conversation (one
:class:`~.agents.Session`, so one root span per attempt for in-process and HTTP agents); a
case without sends its ``input``. Placeholders of redacted data in a message (``dataset build``
writes ``[REDACTED:email:1]``) are replaced by made-up values of their kind before the agent
sees it (:mod:`tracegrade.dataset.placeholders`). After a turn, the *follow-up hook* may answer
the agent's reply as the user would:

1. the case's scripted ``clarifications`` (regular expression -> the user's reply, searched
   case-insensitively in the reply, first match wins), after any turn;
2. then, after the last turn only, a judge clarifier when one is configured
   (:class:`JudgeClarifications` over :class:`tracegrade.judge.clarify.Clarifier` or any
   object with its ``follow_up(case_input, conversation, reply) -> str | None``).

At most ``max_followups`` follow-ups per case (0 turns the hook off); when the agent is still
asking after that, the conversation ends there and the attempt records that it gave up.

Before a turn the case revives (``revive``), the session's agent is revived
(:meth:`~.agents.Session.revive`, :mod:`.revival`) and from then on it is sent only the
messages from that turn on: the conversation before the revival is the agent's to restore.

A case with a simulated ``user`` goes on after its scripted turns (if any) with the
simulated user (:mod:`.simulation`), which then answers the agent itself: the follow-up hook
is not used for such a case.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tracegrade._util.user_regex import UserRegexError, compile_user_regex
from tracegrade.dataset import Case
from tracegrade.dataset.placeholders import stand_in
from tracegrade.runner.agents import Message, Session


@dataclass(frozen=True)
class FollowUp:
    """The user's reply to a clarifying question, who wrote it, and the agent's question."""

    reply: str
    written_by: Literal["script", "judge"]
    question: str = ""


class Clarifier(Protocol):
    """What plays the user after the last turn (:class:`tracegrade.judge.clarify.Clarifier`)."""

    def follow_up(
        self, case_input: str, conversation: Sequence[Mapping[str, str]], reply: str
    ) -> str | None:
        """The user's reply to ``reply`` when it is a clarifying question, else None."""
        ...


class FollowUpHook(Protocol):
    """Decides whether to answer the agent's ``reply`` (``conversation`` is what came before
    it, oldest first); None means the reply stands (no follow-up)."""

    async def __call__(
        self, case: Case, conversation: Sequence[Message], reply: str, *, last_turn: bool
    ) -> FollowUp | None: ...


class ScriptedClarifications:
    """Answers from the case's ``clarifications`` (see the module docstring)."""

    def __init__(self) -> None:
        self._compiled: dict[str, list[tuple[Any, str]]] = {}

    def patterns(self, case: Case) -> list[tuple[Any, str]]:
        """The case's patterns, compiled by RE2 (:mod:`tracegrade._util.user_regex`: linear time
        on the agent's reply); the dataset loader validated nothing about them, so a pattern
        RE2 cannot compile is matched literally."""
        key = case.id or ""
        if key not in self._compiled:
            compiled = []
            for pattern, reply in case.clarifications.items():
                try:
                    compiled.append((compile_user_regex(pattern, True), reply))
                except UserRegexError:
                    compiled.append((compile_user_regex(re.escape(pattern), True), reply))
            self._compiled[key] = compiled
        return self._compiled[key]

    async def __call__(
        self, case: Case, conversation: Sequence[Message], reply: str, *, last_turn: bool
    ) -> FollowUp | None:
        for pattern, answer in self.patterns(case):
            if pattern.search(reply):
                return FollowUp(answer, "script")
        return None


class JudgeClarifications:
    """The judge model plays the user after the last turn (``clarifier.follow_up`` runs in a
    thread; an error leaves the reply standing and is kept in :attr:`errors`)."""

    def __init__(self, clarifier: Clarifier):
        self.clarifier = clarifier
        self.errors: list[str] = []

    async def __call__(
        self, case: Case, conversation: Sequence[Message], reply: str, *, last_turn: bool
    ) -> FollowUp | None:
        if not last_turn:
            return None
        try:
            answer = await asyncio.to_thread(
                self.clarifier.follow_up,
                stand_in(case.input or ""),
                [dict(m) for m in conversation],
                reply,
            )
        except Exception as exc:  # a judge failure must not fail the case
            self.errors.append(f"{case.id}: clarifier failed: {type(exc).__name__}: {exc}")
            return None
        return FollowUp(answer, "judge") if answer else None


class FollowUps:
    """Hooks tried in order; the first that answers wins."""

    def __init__(self, hooks: Sequence[FollowUpHook]):
        self.hooks = list(hooks)

    async def __call__(
        self, case: Case, conversation: Sequence[Message], reply: str, *, last_turn: bool
    ) -> FollowUp | None:
        for hook in self.hooks:
            if (answer := await hook(case, conversation, reply, last_turn=last_turn)) is not None:
                return answer
        return None


@dataclass
class Conversation:
    """What was said: ``messages`` (user and assistant, in order), follow-ups sent and by
    whom, whether the agent was still asking after ``max_followups``, the turns (numbered
    from 1) the agent was revived before, and ``since``: the index in ``messages`` from which
    the current session is sent the conversation."""

    messages: list[Message] = field(default_factory=list)
    followups: list[FollowUp] = field(default_factory=list)
    gave_up: bool = False
    revivals: list[int] = field(default_factory=list)
    since: int = 0

    @property
    def last_reply(self) -> str | None:
        return (
            self.messages[-1]["content"]
            if self.messages and self.messages[-1]["role"] == "assistant"
            else None
        )


async def exchange(session: Session, conversation: Conversation, text: str) -> str:
    """Send ``text`` (its placeholders of redacted data replaced by made-up values:
    :func:`~tracegrade.dataset.placeholders.stand_in`) and record the reply."""
    conversation.messages.append({"role": "user", "content": stand_in(text)})
    reply = await session.send([dict(m) for m in conversation.messages[conversation.since :]])
    conversation.messages.append({"role": "assistant", "content": reply})
    return reply


async def revive_before(session: Session, conversation: Conversation, turn: int) -> None:
    """Revive the agent before user turn ``turn`` (1-based) and send it the conversation from
    there on only."""
    await session.revive()
    conversation.revivals.append(turn)
    conversation.since = len(conversation.messages)


Play = Callable[[Session, Conversation], Awaitable[None]]
"""Goes on with the simulated user after the scripted turns (:meth:`.simulation.
Simulation.play`)."""


async def converse(
    session: Session,
    case: Case,
    hook: FollowUpHook | None,
    conversation: Conversation | None = None,
    play: Play | None = None,
) -> Conversation:
    """Run the case's conversation on ``session`` (see the module docstring). Pass
    ``conversation`` to see how far it got if the call is cancelled (timeout); ``play`` is
    how a case's simulated user goes on.

    Raises:
        AgentFailure: the agent failed a turn or could not be revived (and whatever an
            in-process agent raised).
        ValueError: the case has a simulated user and no ``play`` was given.
    """
    conversation = conversation if conversation is not None else Conversation()
    turns = case.turns or ([case.input] if case.input is not None else [])
    revived = set(case.revived_turns)
    if case.user is not None:
        hook = None  # the simulated user answers the agent itself
        if play is None:
            raise ValueError(f"case {case.id!r} has a simulated user and nobody to play it")
    for index, turn in enumerate(turns):
        if index + 1 in revived:
            await revive_before(session, conversation, index + 1)
        reply = await exchange(session, conversation, turn)
        while hook is not None and case.max_followups > 0:
            answer = await hook(
                case, conversation.messages[:-1], reply, last_turn=index == len(turns) - 1
            )
            if answer is None:
                break
            if len(conversation.followups) >= case.max_followups:
                conversation.gave_up = True
                return conversation
            conversation.followups.append(dataclasses.replace(answer, question=reply))
            reply = await exchange(session, conversation, answer.reply)
    if case.user is not None and play is not None:
        await play(session, conversation)
    return conversation
