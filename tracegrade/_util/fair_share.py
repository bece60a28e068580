"""Which held connection to close when one more arrives at a server's connection cap: the
rule shared by the OTLP/HTTP and dashboard front (:mod:`.http_guard`) and the OTLP/gRPC
front (:mod:`tracegrade.collector.grpc_guard`), so that idle or silent clients, however
many, cannot shut out an active one and one peer address cannot hold every connection.

1. **Idle first.** Of the peer addresses holding a connection idle for ``idle_after_s`` or
   more (nothing received from the client for that long) and not waiting for an answer, the
   one holding the most connections loses its connection idle longest.
2. **Fair share.** When none is that idle, and the newcomer's peer address holds fewer than
   its fair share of the cap (the cap divided by the peer addresses holding connections, the
   newcomer's counted), the connection quiet longest of the peer address holding the most
   connections, if that peer holds more than its share, among those neither waiting for an
   answer nor in the middle of sending a message.
3. Otherwise none: the newcomer is refused.

Between peer addresses holding as many connections, the one whose quietest connection has
been quiet longest counts as holding the most. A connection waiting for its answer (a request
received whole, a gRPC call open) is never chosen, whoever holds it. A peer address is what
the socket reports (an IP address): many clients behind one address (a NAT, a proxy) share
one share.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Generic, Protocol, TypeVar


class Held(Protocol):
    """What the rule reads of a held connection."""

    @property
    def peer_address(self) -> Hashable:
        """The client's address (its host, without the port); None when unknown."""

    @property
    def last_received_at(self) -> float:
        """Event loop time (s) of the connection's opening or its last byte received."""

    @property
    def awaiting_answer(self) -> bool:
        """A request or call was received and its answer is not complete."""

    @property
    def mid_message(self) -> bool:
        """Part of a request (headers or body) was received, not all of it."""


H = TypeVar("H", bound=Held)


class HeldConnections(Generic[H]):
    """The connections a server holds, by peer address, each peer's in the order they last
    received a byte (:meth:`touch` on every read keeps it): :meth:`to_close` then looks at
    each peer's quietest connections, not at every connection (a server at its cap decides
    for every newcomer)."""

    def __init__(self) -> None:
        self.by_peer: dict[Hashable, dict[H, None]] = {}
        self.count = 0

    def add(self, connection: H) -> None:
        self.by_peer.setdefault(connection.peer_address, {})[connection] = None
        self.count += 1

    def remove(self, connection: H) -> None:
        """Forget ``connection`` (nothing when it is not held)."""
        held = self.by_peer.get(connection.peer_address)
        if held is None or held.pop(connection, False) is False:
            return
        self.count -= 1
        if not held:
            del self.by_peer[connection.peer_address]

    def touch(self, connection: H) -> None:
        """``connection`` received a byte (its ``last_received_at`` is now the latest)."""
        held = self.by_peer.get(connection.peer_address)
        if held is not None and held.pop(connection, False) is None:
            held[connection] = None

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[H]:
        for held in list(self.by_peer.values()):
            yield from list(held)

    def to_close(
        self, newcomer_peer: Hashable, *, now: float, idle_after_s: float, cap: int
    ) -> H | None:
        """The connection to close so that a new one from ``newcomer_peer`` is served, by the
        module's rule; None when none may be closed. ``now`` is event loop time (s)."""
        cutoff = now - idle_after_s
        chosen: H | None = None
        for held in self.by_peer.values():
            quietest = _first(held, lambda connection: not connection.awaiting_answer)
            if quietest is None or quietest.last_received_at > cutoff:
                continue
            if chosen is None or _weight(held) > _weight(self.by_peer[chosen.peer_address]):
                chosen = quietest
        return chosen if chosen is not None else self._over_share(newcomer_peer, cap)

    def _over_share(self, newcomer_peer: Hashable, cap: int) -> H | None:
        """Rule 2 of the module docstring."""
        if not self.by_peer:
            return None
        share = cap // len(self.by_peer.keys() | {newcomer_peer})
        heaviest = max(self.by_peer, key=lambda peer: _weight(self.by_peer[peer]))
        newcomer_holds = len(self.by_peer.get(newcomer_peer, ()))
        if heaviest == newcomer_peer or newcomer_holds >= share:
            return None
        if len(self.by_peer[heaviest]) <= share:
            return None
        return _first(
            self.by_peer[heaviest],
            lambda connection: not connection.awaiting_answer and not connection.mid_message,
        )


def _weight(held: dict[H, None]) -> tuple[int, float]:
    """How heavily a peer address holds: its connections, then (between peers holding as
    many) how long its quietest connection has been quiet."""
    return len(held), -next(iter(held)).last_received_at


def _first(held: dict[H, None], usable: Callable[[H], bool]) -> H | None:
    """The quietest connection of ``held`` (activity order) that is ``usable``."""
    return next((connection for connection in held if usable(connection)), None)
