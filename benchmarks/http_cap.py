"""What the OTLP/HTTP and dashboard guard spends choosing a connection to close at its cap.

    python benchmarks/http_cap.py [--held 1024] [--newcomers 5000] [--peers 4] [--json]

A uvicorn server (a child process, one route, the guard of :mod:`tracegrade._util.http_guard`
with its default cap of 1,024 connections) is filled to its cap with ``--held`` silent
connections from ``--peers`` loopback addresses (127.0.0.1, 127.0.0.2, ...); once they are
idle past ``evictable_after_s``, ``--newcomers`` more connect back to back (silent too, each
kept open), so the server decides for each which held connection to close (the idlest of the
peer holding the most; once the held ones are fresh, none: 503). The client keeps every
socket open until the end (``--held`` + ``--newcomers`` descriptors).

Reported, over the newcomers only: the server process's CPU seconds (``cpu_s``) and per
newcomer (``cpu_us_per_newcomer``), the CPU seconds spent inside the guard's decision
(``LimitedProtocol._idlest``, timed with the thread's CPU clock: ``decision_s``,
``decision_us``), ``decision_share`` (decision / server CPU, same run: what the decision
costs a flood), and how many newcomers were served or refused.
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def serve() -> None:
    """The child: serve on a free port, print it; on each line of stdin print the process's
    CPU seconds and the decision's (JSON); exit at end of stdin."""
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from tracegrade._util.http_guard import LimitedProtocol

    spent = {"decision_s": 0.0, "decisions": 0}

    class Timed(LimitedProtocol):
        def _idlest(self) -> Any:
            started = time.thread_time()
            try:
                return super()._idlest()
            finally:
                spent["decision_s"] += time.thread_time() - started
                spent["decisions"] += 1

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])
    sock = socket.create_server(("0.0.0.0", 0), backlog=4096)
    config = uvicorn.Config(app, http=Timed, log_level="critical", lifespan="off", backlog=4096)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    print(sock.getsockname()[1], flush=True)
    for _ in sys.stdin:
        print(json.dumps({"cpu_s": time.process_time(), **spent}), flush=True)
    server.should_exit = True
    thread.join(10)


def _connect(port: int, peer: int) -> socket.socket | None:
    sock = socket.socket()
    try:
        sock.bind((f"127.0.0.{1 + peer}", 0))
        sock.connect(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None
    return sock


def _refused(sock: socket.socket) -> bool:
    """Whether the server answered (503) or closed ``sock`` already."""
    sock.setblocking(False)
    try:
        sock.recv(1)  # an answer's first byte, or b"" once closed
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        port = int(child.stdout.readline())

        def spent() -> dict[str, float]:
            child.stdin.write("\n")  # type: ignore[union-attr]
            child.stdin.flush()  # type: ignore[union-attr]
            return json.loads(child.stdout.readline())  # type: ignore[union-attr]

        held: collections.deque[socket.socket] = collections.deque()
        for n in range(args.held):
            if (sock := _connect(port, n % args.peers)) is not None:
                held.append(sock)
        time.sleep(1.5)  # idle past evictable_after_s (1 s)
        before = spent()
        newcomers: list[socket.socket] = []
        for n in range(args.newcomers):
            if (sock := _connect(port, n % args.peers)) is not None:
                newcomers.append(sock)
                held.append(sock)
        after = spent()
        while True:  # until the server has accepted what was sent
            time.sleep(0.3)
            before_last, after = after, spent()
            if after["decisions"] == before_last["decisions"]:
                break
        refused = sum(_refused(sock) for sock in newcomers[-args.held :])
        for sock in held:
            sock.close()
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    cpu_s = after["cpu_s"] - before["cpu_s"]
    decision_s = after["decision_s"] - before["decision_s"]
    decisions = after["decisions"] - before["decisions"]
    return {
        "held": args.held,
        "newcomers": len(newcomers),
        "decisions": decisions,
        "refused_of_last_held": refused,
        "cpu_s": round(cpu_s, 3),
        "cpu_us_per_newcomer": round(cpu_s / max(1, len(newcomers)) * 1e6, 1),
        "decision_s": round(decision_s, 4),
        "decision_us": round(decision_s / max(1, decisions) * 1e6, 1),
        "decision_share": round(decision_s / cpu_s, 4) if cpu_s else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--held", type=int, default=1024)
    parser.add_argument("--newcomers", type=int, default=5000)
    parser.add_argument("--peers", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    result = run(args)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
