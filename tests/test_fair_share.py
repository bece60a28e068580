"""The rule both receiver ports (and the dashboard) follow at their connection cap
(:meth:`tracegrade._util.fair_share.HeldConnections.to_close`), case by case, and the
ledger's activity order."""

from __future__ import annotations

from dataclasses import dataclass

from tracegrade._util.fair_share import HeldConnections


@dataclass(eq=False)
class Conn:
    peer_address: str
    last_received_at: float
    awaiting_answer: bool = False
    mid_message: bool = False


NOW = 100.0


def ledger(held: list[Conn]) -> HeldConnections[Conn]:
    """``held`` added in the order they last received a byte, as a server touches them."""
    connections: HeldConnections[Conn] = HeldConnections()
    for connection in sorted(held, key=lambda connection: connection.last_received_at):
        connections.add(connection)
    return connections


def close(held: list[Conn], newcomer: str = "10.0.0.9", cap: int = 10) -> Conn | None:
    return ledger(held).to_close(newcomer, now=NOW, idle_after_s=1.0, cap=cap)


def test_the_idlest_of_the_peer_holding_the_most_idle_connections_goes_first():
    idlest_of_few = Conn("a", 10.0)
    held = [idlest_of_few, Conn("a", 20.0)] + [Conn("b", t) for t in (50.0, 40.0, 60.0)]
    assert close(held) is held[3]  # b holds 3 idle, a 2: b's idlest (40), not a's (10)


def test_a_connection_waiting_for_its_answer_is_never_closed():
    held = [Conn("a", 1.0, awaiting_answer=True) for _ in range(10)]
    assert close(held) is None
    held.append(Conn("a", 2.0))
    assert close(held) is held[-1]


def test_connections_too_fresh_are_kept_when_the_newcomer_s_peer_has_its_share():
    held = [Conn("a", NOW - 0.1) for _ in range(5)] + [Conn("b", NOW - 0.1) for _ in range(5)]
    assert close(held, "a") is None  # a holds its share, 5 = 10 // 2: nothing to take
    assert close(held, "b") is None
    assert close(held, "c") in held  # a third peer's share is 10 // 3: a and b are over it


def test_a_peer_over_its_fair_share_makes_room_for_another_peer():
    held = [Conn("a", NOW - 0.5 + n / 100) for n in range(10)]
    assert close(held, "b") is held[0]  # a holds 10 > 10 // 2; its quietest goes
    assert close(held, "a") is None  # a's own newcomer: a is not over a share of its own
    held[0].mid_message = True
    assert close(held, "b") is held[1]  # one sending a message is not cut off


def test_a_peer_under_its_share_takes_from_the_one_holding_the_most():
    held = [Conn("a", NOW - 0.5) for _ in range(6)] + [Conn("b", NOW - 0.6) for _ in range(4)]
    assert close(held, "b") in held[:6]  # b holds 4 < 5, a 6 > 5: one of a's goes
    held = held[1:] + [Conn("b", NOW - 0.6)]
    assert close(held, "b") is None  # b holds its share now, 5, and a no more than it


def test_a_touched_connection_is_its_peer_s_last_and_a_removed_one_is_forgotten():
    held = [Conn("a", 10.0), Conn("a", 20.0), Conn("b", 30.0)]
    connections = ledger(held)
    held[0].last_received_at = 99.5
    connections.touch(held[0])  # it received a byte: a's idlest is now held[1]
    assert connections.to_close("c", now=NOW, idle_after_s=1.0, cap=3) is held[1]
    connections.remove(held[1])
    connections.remove(held[1])  # twice: nothing
    assert len(connections) == 2 and list(connections) == [held[0], held[2]]
    assert connections.to_close("c", now=NOW, idle_after_s=1.0, cap=3) is held[2]
    connections.touch(Conn("a", 99.9))  # not held: nothing
    assert len(connections) == 2


def test_between_peers_holding_as_many_the_one_quiet_longest_loses():
    a1, b1, b2, a2 = Conn("a", 10.0), Conn("b", 20.0), Conn("b", 25.0), Conn("a", 26.0)
    connections: HeldConnections[Conn] = HeldConnections()
    for connection in (a1, b1, b2, a2):
        connections.add(connection)
    a1.last_received_at = 50.0
    connections.touch(a1)  # a holds 26 and 50, b 20 and 25: b's quietest is the quieter
    assert connections.to_close("c", now=NOW, idle_after_s=1.0, cap=4) is b1
    assert connections.to_close("c", now=NOW, idle_after_s=99.0, cap=4) is b1  # none idle
