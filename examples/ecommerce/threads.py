"""Conversation threads: the shop assistant keeps each conversation itself, by its id, so a
customer can come back to it (the way a service with a checkpointer or a thread table works).

Two stores:

- :class:`SqliteThreads`: one row per message in a SQLite file; a thread survives a restart
  of the process that wrote it.
- :class:`MemoryThreads`: in the process's memory; a restart loses every thread, the
  state-persistence bug ``tracegrade run``'s agent revival (``revive: true``) catches.

:func:`reply_in_thread` loads the thread, appends the customer's message, asks the assistant
(:func:`examples.ecommerce.agent.answer`) with the whole thread, and stores the message and
the reply. Entry points:

- in process, agent factories for ``tracegrade run --agent``: :func:`sqlite_agent` (the file
  is ``$SHOP_THREADS_DB``, default ``.tracegrade/shop-threads.db``) and :func:`memory_agent`;
  each call returns the agent of one conversation, ``conversation_id`` (a revival calls the
  factory again, as a restarted server would start);
- command line: ``python -m examples.ecommerce --conversation-id ID --threads PATH``;
- HTTP service: ``python -m examples.ecommerce.serve --threads PATH|memory``, with the body
  ``{"message": ..., "conversation_id": ...}``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

THREADS_DB_ENV = "SHOP_THREADS_DB"
"""The SQLite file of :func:`sqlite_agent`'s threads."""
DEFAULT_THREADS_DB = ".tracegrade/shop-threads.db"

Message = dict[str, str]
"""``{"role": "user" | "assistant", "content": str}``."""


class ThreadStore(Protocol):
    """Where conversations are kept, by conversation id (oldest message first)."""

    def load(self, conversation_id: str) -> list[Message]:
        """The thread so far (empty for a new conversation)."""
        ...

    def append(self, conversation_id: str, messages: list[Message]) -> None:
        """Add messages at the end of the thread."""
        ...


class MemoryThreads:
    """Threads in this process's memory (lost when it ends)."""

    def __init__(self) -> None:
        self._threads: dict[str, list[Message]] = {}
        self._lock = threading.Lock()

    def load(self, conversation_id: str) -> list[Message]:
        with self._lock:
            return [dict(m) for m in self._threads.get(conversation_id, [])]

    def append(self, conversation_id: str, messages: list[Message]) -> None:
        with self._lock:
            self._threads.setdefault(conversation_id, []).extend(dict(m) for m in messages)


_SCHEMA = """CREATE TABLE IF NOT EXISTS thread_messages (
    conversation_id TEXT NOT NULL, position INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, PRIMARY KEY (conversation_id, position))"""


class SqliteThreads:
    """Threads in a SQLite file (created on first use); safe across threads and processes
    (one short transaction per call)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def load(self, conversation_id: str) -> list[Message]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT role, content FROM thread_messages WHERE conversation_id = ? "
                "ORDER BY position",
                (conversation_id,),
            ).fetchall()
        return [{"role": role, "content": content} for role, content in rows]

    def append(self, conversation_id: str, messages: list[Message]) -> None:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            (count,) = db.execute(
                "SELECT COUNT(*) FROM thread_messages WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            db.executemany(
                "INSERT INTO thread_messages VALUES (?, ?, ?, ?)",
                [
                    (conversation_id, count + i, m["role"], m["content"])
                    for i, m in enumerate(messages)
                ],
            )


def open_threads(spec: str) -> ThreadStore:
    """``memory`` -> :class:`MemoryThreads`, anything else is a SQLite file path."""
    return MemoryThreads() if spec == "memory" else SqliteThreads(spec)


def reply_in_thread(store: ThreadStore, conversation_id: str, message: str) -> str:
    """The assistant's reply to ``message`` in the conversation ``conversation_id``, which is
    kept in ``store`` (see the module docstring).

    Raises:
        ValueError: an empty message.
        Whatever :func:`examples.ecommerce.agent.answer` raises (nothing is stored then).
    """
    from examples.ecommerce.agent import answer  # the openai client takes a second to import

    user = {"role": "user", "content": message}
    reply = answer([*store.load(conversation_id), user])
    store.append(conversation_id, [user, {"role": "assistant", "content": reply}])
    return reply


def _agent(store: ThreadStore, conversation_id: str) -> Callable[[str], str]:
    def reply(message: str) -> str:
        """The assistant's reply in this conversation (its thread in the store)."""
        return reply_in_thread(store, conversation_id, message)

    return reply


def sqlite_agent(conversation_id: str = "default") -> Callable[[str], str]:
    """The agent of conversation ``conversation_id``, its thread in ``$SHOP_THREADS_DB``."""
    path = os.environ.get(THREADS_DB_ENV) or DEFAULT_THREADS_DB
    return _agent(SqliteThreads(path), conversation_id)


def memory_agent(conversation_id: str = "default") -> Callable[[str], str]:
    """The agent of conversation ``conversation_id``, its thread in memory: a new agent (a
    restart) starts with none."""
    return _agent(MemoryThreads(), conversation_id)
