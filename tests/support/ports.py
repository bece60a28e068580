"""Free TCP ports for servers a test starts itself, chosen outside the kernel's ephemeral
range (``/proc/sys/net/ipv4/ip_local_port_range``).

A port taken with ``bind(0)`` comes from the ephemeral range, which every outgoing connection
also draws from: a server that takes seconds to start (Phoenix, ~20 s) found its port taken by
another test's client connection in between (``Failed to bind to address [::]:42567`` in a CI
run while the hostile-client tests opened thousands of connections). A port outside that
range is only ever taken by an explicit bind. The same holds a port a test needs closed
(nothing listening): a server started elsewhere with ``bind(0)`` is never given it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000
TRIES = 200


def _ephemeral() -> range:
    try:
        low, high = (int(part) for part in RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        low, high = 32_768, 60_999  # Linux's default
    return range(low, high + 1)


def _bindable(port: int) -> bool:
    with socket.socket() as probe:  # every IPv4 address: fails if any one holds the port
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port no one listens on, outside the ephemeral range when the range leaves room."""
    ephemeral = _ephemeral()
    candidates = [port for port in range(LOWEST, 65_536) if port not in ephemeral]
    for port in random.sample(candidates, min(TRIES, len(candidates))):
        if _bindable(port):
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
