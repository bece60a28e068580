"""Listening addresses: IPv4, IPv6 (``::1`` or ``[::1]``) and host names, spelled once.

gRPC parses ``::1:4317`` as a host name with a port and fails; an IPv6 literal must be in
brackets there and in URLs, and without them for ``socket``. :func:`bare_host` takes either
spelling; :func:`host_port` writes the bracketed form wherever a port follows.
"""

from __future__ import annotations

import errno
import ipaddress
import socket


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


def check_free(host: str, port: int, what: str) -> None:
    """Raise a clear error when ``port`` on ``host`` is taken, before a server binds it:
    grpcio's C core otherwise logs a raw ``add_port.cc`` line on stderr first. The probe
    binds as the servers do (``SO_REUSEADDR``: a port in TIME_WAIT counts as free); port 0
    (any free port) is not checked.

    Raises:
        OSError: the port is in use (``errno.EADDRINUSE``), naming ``what`` and the fix.
    """
    if port == 0:
        return
    try:
        found = socket.getaddrinfo(
            bare_host(host), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, ValueError):
        return  # the server reports an unresolvable host itself
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    continue
                taken = OSError(
                    f"cannot bind the {what} {host_port(host, port)}: the port is in use "
                    "(another process listens on it; stop it, or choose another port, 0 for "
                    "any free one)"
                )
                taken.errno = errno.EADDRINUSE
                raise taken from None
