"""Who may try to log in to the dashboard and who is logged in: :class:`LoginThrottle` holds
back wrong passwords and tokens at ``POST /login`` per client address and per account with
exponential backoff, and :class:`LoginSessions` keeps the sessions a login starts.

Throttling:

- **Per address**: after :attr:`LoginThrottle.PER_ADDRESS` failures from one address (any
  account), that address waits ``BASE_S * 2**(failures - PER_ADDRESS)`` seconds after its
  last failure (at most :attr:`LoginThrottle.MAX_WAIT_S`) before its next attempt, even with
  the right password (a guesser cannot tell).
- **Per account**: after :attr:`LoginThrottle.PER_ACCOUNT` failures on one account (a name,
  or ``token`` for the UI token) from all addresses, an address that has itself failed on
  that account waits the same backoff (counted over the account's failures) after its own last
  failure on it; the first attempt from any other address is still checked, and an address
  that logged into the account before is never held back by the account's count. So a
  guesser spread over many addresses gets about one guess per address per backoff, and cannot
  lock the real user out of her account from her own address (round three of the hostile
  review found a global count doing exactly that).

An address is counted as its :func:`address_key`: an IPv6 address by its /64 network (one
host usually holds a whole /64, and rotating through it would give a guess per address).

Failures are forgotten :attr:`LoginThrottle.FORGET_S` after an address's or account's last
one; at most :attr:`LoginThrottle.MAX_KEYS` addresses, accounts and pairs are remembered (the
least recently failing are forgotten first). State is per process: a restart forgets it.
"""

from __future__ import annotations

import ipaddress
import secrets
import time
from collections import OrderedDict


def address_key(address: str) -> str:
    """The key a client address is throttled under: an IPv4 address as is, an IPv6 address's
    /64 network (``"2001:db8::/64"``; an IPv4-mapped one as its IPv4 address), anything else
    (a test client's name) as is."""
    try:
        parsed = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


def backoff_s(failures: int, threshold: int, base_s: float, max_s: float) -> float:
    """The wait after ``failures`` failures: 0 below ``threshold``, then ``base_s`` doubled per
    failure beyond it, at most ``max_s`` (seconds)."""
    if failures < threshold:
        return 0.0
    return min(max_s, base_s * 2.0 ** min(failures - threshold, 32))


class _Failures:
    """Failure counts with the time of the last one, per key, least recently failing first."""

    def __init__(self, max_keys: int, forget_s: float) -> None:
        self._seen: OrderedDict[object, tuple[int, float]] = OrderedDict()
        self.max_keys = max_keys
        self.forget_s = forget_s

    def get(self, key: object, now: float) -> tuple[int, float]:
        """(failures, when the last was) for ``key``; (0, 0.0) when none or forgotten."""
        count, last = self._seen.get(key, (0, 0.0))
        if count and now - last >= self.forget_s:
            self._seen.pop(key, None)
            return 0, 0.0
        return count, last

    def add(self, key: object, now: float) -> None:
        """Count a failure for ``key`` at ``now``."""
        count, _ = self.get(key, now)
        self._seen.pop(key, None)
        self._seen[key] = (count + 1, now)
        while len(self._seen) > self.max_keys:
            self._seen.popitem(last=False)


class LoginThrottle:
    """Wrong passwords and tokens per address and per account (see the module docstring);
    times are ``time.monotonic()`` seconds unless ``now`` is given."""

    PER_ADDRESS = 5
    PER_ACCOUNT = 10
    BASE_S = 1.0
    MAX_WAIT_S = 15 * 60.0
    FORGET_S = 60 * 60.0
    MAX_KEYS = 4096
    KNOWN_S = 30 * 24 * 3600.0
    """How long an address that logged into an account stays exempt from its account count."""

    def __init__(self) -> None:
        self._addresses = _Failures(self.MAX_KEYS, self.FORGET_S)
        self._accounts = _Failures(self.MAX_KEYS, self.FORGET_S)
        self._pairs = _Failures(self.MAX_KEYS, self.FORGET_S)
        self._known: OrderedDict[tuple[str, str], float] = OrderedDict()

    def _wait(self, count: int, last: float, threshold: int, now: float) -> float:
        return max(0.0, last + backoff_s(count, threshold, self.BASE_S, self.MAX_WAIT_S) - now)

    def retry_after_s(self, address: str, account: str, now: float | None = None) -> float:
        """Seconds ``address`` must wait before its next attempt on ``account`` (0: now)."""
        now, address = time.monotonic() if now is None else now, address_key(address)
        waits = [self._wait(*self._addresses.get(address, now), self.PER_ADDRESS, now)]
        tried, last = self._pairs.get((address, account), now)
        if tried and not self._is_known(address, account, now):
            count, _ = self._accounts.get(account, now)
            waits.append(self._wait(count, last, self.PER_ACCOUNT, now))
        return max(waits)

    def failed(self, address: str, account: str, now: float | None = None) -> None:
        """Record a wrong password or token from ``address`` for ``account``."""
        now, address = time.monotonic() if now is None else now, address_key(address)
        self._addresses.add(address, now)
        self._accounts.add(account, now)
        self._pairs.add((address, account), now)

    def succeeded(self, address: str, account: str, now: float | None = None) -> None:
        """Record a login: ``address`` is no longer held back by ``account``'s count."""
        now, address = time.monotonic() if now is None else now, address_key(address)
        self._known.pop((address, account), None)
        self._known[(address, account)] = now
        while len(self._known) > self.MAX_KEYS:
            self._known.popitem(last=False)

    def _is_known(self, address: str, account: str, now: float) -> bool:
        when = self._known.get((address, account))
        return when is not None and now - when < self.KNOWN_S


class LoginSessions:
    """The dashboard's login sessions (the ``tg_session`` cookie's random ids), per process.

    Each session keeps its user and, for a named account, a stamp of the account's password
    (:meth:`Accounts.stamp <tracegrade.web.security.Accounts.stamp>`): the guard ends a
    session whose account is gone or whose password changed since. A session ends
    :attr:`TTL_S` after its login; a user keeps at most :attr:`PER_USER` sessions, and a login
    beyond ends that user's oldest, never another user's (round three found 1,024 logins by one
    client evicting everyone's sessions from a shared fixed-size store).
    """

    TTL_S = 12 * 3600.0
    PER_USER = 64

    def __init__(self) -> None:
        self._found: dict[str, tuple[float, str, str | None]] = {}
        """Session id -> (when it expires (time.monotonic()), user, password stamp or None)."""
        self._of_user: dict[str, OrderedDict[str, None]] = {}
        """User -> their session ids, oldest login first."""

    def start(self, user: str, stamp: str | None = None, now: float | None = None) -> str:
        """Start a session for ``user`` (``stamp``: the account's password stamp, None for the
        token); returns its id, the cookie's value."""
        now = time.monotonic() if now is None else now
        mine = self._of_user.setdefault(user, OrderedDict())
        for old in [s for s in mine if self._found[s][0] <= now]:
            self.end(old)
        while len(mine) >= self.PER_USER:
            self.end(next(iter(mine)))
        session = secrets.token_urlsafe(32)
        self._found[session] = (now + self.TTL_S, user, stamp)
        self._of_user.setdefault(user, mine)[session] = None
        return session

    def find(self, session: str, now: float | None = None) -> tuple[str, str | None] | None:
        """(user, password stamp) of a live session; None when unknown, ended or expired."""
        found = self._found.get(session)
        if found is None:
            return None
        if found[0] <= (time.monotonic() if now is None else now):
            self.end(session)
            return None
        return found[1], found[2]

    def end(self, session: str | None) -> None:
        """End a session (logout, or its account changed): its cookie opens nothing any more."""
        found = self._found.pop(session, None) if session else None
        if found is None:
            return
        mine = self._of_user.get(found[1])
        if mine is not None:
            mine.pop(session or "", None)
            if not mine:
                del self._of_user[found[1]]
