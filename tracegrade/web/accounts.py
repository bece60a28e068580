"""Named accounts of ``tracegrade ui`` (``tracegrade users``): passwords hashed with Argon2id
by argon2-cffi's :class:`argon2.PasswordHasher` (its RFC 9106 low-memory defaults; the hash
carries its parameters and salt), so only hashes are stored
(:mod:`tracegrade.store.users`). A login with a correct password whose hash was made with
older parameters rehashes it."""

from __future__ import annotations

import hashlib
import re

from tracegrade._util.extras import extra_error

try:
    from argon2 import PasswordHasher
    from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
except ModuleNotFoundError as exc:  # the [ui] extra
    raise extra_error(exc, "the dashboard's accounts") from exc

from tracegrade.errors import ConfigError
from tracegrade.store import users
from tracegrade.store.traces import Store

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
"""An account name: letters, digits and ``_ . @ -``, at most 64 characters."""
MIN_PASSWORD = 8
"""Shortest password accepted (characters)."""
_HASHER = PasswordHasher()
_DUMMY = _HASHER.hash("tracegrade: no such account")
"""Verified against for an unknown name, so a login takes as long either way."""


def set_password(db: str | None, name: str, password: str) -> bool:
    """Create account ``name`` with ``password``, or change its password; True when new.

    Raises:
        ConfigError: a bad name, or a password shorter than :data:`MIN_PASSWORD`.
    """
    if not NAME.match(name):
        raise ConfigError(f"account name {name!r}: letters, digits, '_', '.', '@' or '-'")
    if len(password) < MIN_PASSWORD:
        raise ConfigError(f"a password has at least {MIN_PASSWORD} characters")
    with Store(db) as store:
        return users.put_user(store.db, name, _HASHER.hash(password))


def verify(store: Store, name: str, password: str) -> bool:
    """True when ``password`` is account ``name``'s (checked in constant time by argon2)."""
    return check_password(store, name, password) is not None


def check_password(store: Store, name: str, password: str) -> str | None:
    """The :func:`password_stamp` of the hash ``password`` was verified against when it is
    account ``name``'s (constant time, argon2; a hash of older parameters is rehashed and the
    new one's stamp returned), else None. The stamp is of the very hash checked, so a password
    changed during the check does not open a session under the new one."""
    stored = users.password_hash(store.db, name)
    try:
        _HASHER.verify(stored or _DUMMY, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return None
    if stored is None:
        return None
    if _HASHER.check_needs_rehash(stored):
        stored = _HASHER.hash(password)
        users.set_hash(store.db, name, stored)
    return _stamp_of(stored)


def password_stamp(store: Store, name: str) -> str | None:
    """A digest of account ``name``'s stored password hash (SHA-256, hex): it changes when the
    password does (a new salt each time); None when there is no such account. Sessions keep it
    and end when it changes (:class:`tracegrade.web.logins.LoginSessions`)."""
    stored = users.password_hash(store.db, name)
    return None if stored is None else _stamp_of(stored)


def _stamp_of(stored: str) -> str:
    return hashlib.sha256(stored.encode()).hexdigest()


def has_accounts(store: Store) -> bool:
    """Whether any named account exists (the UI then asks for a name and password)."""
    return bool(users.user_names(store.db))


def account_names(db: str | None) -> list[str]:
    """The account names, sorted."""
    with Store(db) as store:
        return users.user_names(store.db)


def remove_account(db: str | None, name: str) -> None:
    """Delete account ``name``.

    Raises:
        StoreError: no such account.
    """
    with Store(db) as store:
        users.remove_user(store.db, name)
