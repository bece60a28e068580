"""Listening addresses: IPv4, IPv6 (``::1`` or ``[::1]``) and host names, spelled once.

gRPC parses ``::1:4317`` as a host name with a port and fails; an IPv6 literal must be in
brackets there and in URLs, and without them for ``socket``. :func:`bare_host` takes either
spelling; :func:`host_port` writes the bracketed form wherever a port follows.
"""

from __future__ import annotations

import ipaddress


def bare_host(host: str) -> str:
    """``host`` without the brackets of an IPv6 literal (``[::1]`` -> ``::1``).

    Raises:
        ValueError: brackets around something that is not an IPv6 address, or unbalanced.
    """
    host = host.strip()
    if host.startswith("[") or host.endswith("]"):
        inner = host[1:-1] if host.startswith("[") and host.endswith("]") else ""
        try:
            ipaddress.IPv6Address(inner)
        except ValueError:
            raise ValueError(f"{host!r} is not a bracketed IPv6 address") from None
        return inner
    return host


def host_port(host: str, port: int) -> str:
    """``host:port``, an IPv6 literal in brackets (``[::1]:4317``), for gRPC and URLs."""
    host = bare_host(host)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ``::1`` with or without
    brackets); False for host names and every other address (``0.0.0.0`` included)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare_host(host)).is_loopback
    except ValueError:
        return False
