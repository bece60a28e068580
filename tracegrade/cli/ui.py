"""``tracegrade ui``: serve the web dashboard and case editor until Ctrl-C."""

from __future__ import annotations

import getpass
import socket
from pathlib import Path

import click

from tracegrade._util.http_guard import LimitedProtocol
from tracegrade.cli.options import reading_db_option
from tracegrade.errors import ConfigError
from tracegrade.store.traces import Store
from tracegrade.web.accounts import account_names
from tracegrade.web.security import LOOPBACK_NAMES, TOKEN_ENV, allowed_hosts, is_loopback

LOOPBACK_HOSTS = frozenset(LOOPBACK_NAMES)

DEFAULT_PORT = 8765


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@click.command("ui")
@reading_db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port (0: any free port; the readiness line says which).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    show_envvar=True,
    default=None,
    help="Require this token (login form or 'Authorization: Bearer'); required off loopback.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name the server answers to besides the loopback names (repeatable; e.g. "
    "behind a reverse proxy). Bound off loopback without it, any name is answered.",
)
@click.option(
    "--user-header",
    metavar="NAME",
    help="A trusted proxy's header naming the user (e.g. X-Forwarded-User); believed only "
    "from --trusted-proxy addresses.",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    metavar="ADDRESS",
    help="A reverse proxy's address (the TCP peer) whose --user-header and X-Forwarded-For are "
    "believed (repeatable; default: loopback with --user-header, else none).",
)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A dataset file the case editor may edit (repeatable; no other file is opened).",
)
def command(
    db: str | None,
    host: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    user_header: str | None,
    trusted_proxies: tuple[str, ...],
    datasets: tuple[Path, ...],
) -> None:
    """Serve the dashboard (runs, trends, compare, traces, review) and the case editor.

    Prints one line with the URL once serving. Listening beyond loopback needs --token, named
    accounts (tracegrade users) or --user-header."""
    import uvicorn

    from tracegrade.web import UiConfig, create_app

    if token is not None and not token.strip():
        raise ConfigError(f"--token / {TOKEN_ENV} is blank: set a token of visible characters")
    with Store(db):  # a store that cannot be opened is an error now, not a 500 per page
        pass
    if not is_loopback(host) and not (token or user_header or account_names(db)):
        raise ConfigError(
            f"--host {host} is not loopback: set --token (or {TOKEN_ENV}), add accounts "
            "(tracegrade users add) or --user-header, so only known people read traces"
        )
    app = create_app(
        UiConfig(
            db=db,
            token=token,
            datasets=tuple(p.resolve() for p in datasets),
            hosts=allowed_hosts(host, allow_hosts),
            user_header=user_header,
            trusted_proxies=_proxies(trusted_proxies, user_header),
            local_user=getpass.getuser(),
        )
    )
    sock = _bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"tracegrade ui: serving http://{shown}:{sock.getsockname()[1]}/", err=False)
    # Headers bounded in size (431) and time (10 s), connections in number: see http_guard.
    # The lifespan runs the trace index in the background (tracegrade.web.app).
    config = uvicorn.Config(
        app,
        http=LimitedProtocol,
        log_level="warning",
        access_log=False,
        lifespan="on",
        # The client address is the TCP peer's; X-Forwarded-For is read by the guard, only
        # from --trusted-proxy peers (uvicorn's default believed it from any loopback peer).
        proxy_headers=False,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        app.state.ui.close()


def _proxies(given: tuple[str, ...], user_header: str | None) -> frozenset[str]:
    """The trusted proxies: those given, else loopback when a user header is set (a proxy on
    this machine), else none (no forwarded header is believed)."""
    if given:
        return frozenset(given)
    return LOOPBACK_HOSTS if user_header else frozenset()
