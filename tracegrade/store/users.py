"""Named accounts of ``tracegrade ui`` (the ``ui_users`` table): a name and a password hash
(computed by :mod:`tracegrade.web.accounts`; no password is ever stored)."""

from __future__ import annotations

import time

from tracegrade.errors import StoreError
from tracegrade.store.database import Database


def put_user(db: Database, name: str, password_hash: str) -> bool:
    """Create the account ``name`` or replace its password hash; True when it is new."""
    with db:
        existed = db.execute("SELECT 1 FROM ui_users WHERE name = ?", (name,)).fetchone()
        db.execute(
            "INSERT INTO ui_users (name, password_hash, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash",
            (name, password_hash, time.time()),
        )
    return existed is None


def password_hash(db: Database, name: str) -> str | None:
    """The stored hash of account ``name``; None when there is no such account."""
    row = db.execute("SELECT password_hash FROM ui_users WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])


def set_hash(db: Database, name: str, new_hash: str) -> None:
    """Replace an account's hash (a rehash with current parameters after a login)."""
    with db:
        db.execute("UPDATE ui_users SET password_hash = ? WHERE name = ?", (new_hash, name))


def user_names(db: Database) -> list[str]:
    """Account names, sorted."""
    return [row[0] for row in db.execute("SELECT name FROM ui_users ORDER BY name")]


def remove_user(db: Database, name: str) -> None:
    """Delete account ``name``.

    Raises:
        StoreError: no such account.
    """
    with db:
        removed = db.execute("DELETE FROM ui_users WHERE name = ?", (name,)).rowcount
    if removed != 1:
        raise StoreError(f"no account {name!r}")
