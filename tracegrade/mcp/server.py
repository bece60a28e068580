"""``tracegrade mcp``: the tools of :mod:`.tools` served over the Model Context Protocol with the
official ``mcp`` Python SDK (``MCPServer``), on stdio or streamable HTTP.

Read-only unless built with ``allow_writes`` (``--allow-writes``): only then are
``mark_baseline`` and ``label_review_item`` registered, so a client without it cannot even see
them. Over HTTP the server sits behind the dashboard's token (``--token`` /
``TRACEGRADE_UI_TOKEN``): every request must send ``Authorization: Bearer TOKEN``
(:class:`TokenGate`); off loopback a token is required.

The SDK is the ``mcp`` extra (``pip install 'tracegrade[mcp]'``); without it
:func:`build_server` raises :class:`~tracegrade.errors.ConfigError` naming that line.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tracegrade.errors import ConfigError
from tracegrade.mcp.tools import Tools
from tracegrade.version import __version__

if TYPE_CHECKING:
    try:  # noqa: SIM105 (the mcp extra; check_deps reads try/except ImportError)
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        pass

INSTALL = "pip install 'tracegrade[mcp]'"
NAME = "tracegrade"
INSTRUCTIONS = (
    "tracegrade evaluates AI agents from their OpenTelemetry traces. Start with list_runs; "
    "failed_cases shows why a run's cases failed; compare_runs shows what regressed between "
    "two runs, case by case; case_trace shows a case's conversation with its tool calls. "
    "Run references: an id or prefix, latest, latest~N, baseline."
)
READ_TOOLS = (
    "list_runs",
    "failed_cases",
    "compare_runs",
    "case_trace",
    "lint_file",
    "score_file",
    "search_traces",
)
WRITE_TOOLS = ("mark_baseline", "label_review_item")


def _sdk() -> Any:
    """The SDK's ``MCPServer`` class and ``ToolAnnotations``.

    Raises:
        ConfigError: the ``mcp`` extra is not installed (the message names the install line).
    """
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp_types import ToolAnnotations
    except ImportError as exc:
        raise ConfigError(
            f"tracegrade mcp needs the official MCP SDK: {INSTALL} ({exc.name} is missing)"
        ) from exc
    return MCPServer, ToolAnnotations


def build_server(db: str | None = None, *, allow_writes: bool = False) -> MCPServer[Any]:
    """The MCP server of the store ``db``: the read tools, and the write tools when
    ``allow_writes``.

    Raises:
        ConfigError: the SDK is not installed.
    """
    server_class, annotations = _sdk()
    tools = Tools(db)
    server = server_class(NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    names = READ_TOOLS + (WRITE_TOOLS if allow_writes else ())
    for name in names:
        method: Callable[..., Any] = getattr(tools, name)
        read_only = name in READ_TOOLS
        server.add_tool(
            method,
            name=name,
            description=(method.__doc__ or "").split("\n\n")[0].replace("\n", " "),
            annotations=annotations(readOnlyHint=read_only, destructiveHint=False),
        )
    built: MCPServer[Any] = server
    return built


class TokenGate:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer TOKEN`` (compared in
    constant time); others get ``401`` and a JSON error. No token: every request passes (the
    command allows that on loopback only)."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.token is not None:
            header = Request(scope).headers.get("authorization", "")
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode(), self.token.encode()
            ):
                response = JSONResponse(
                    {"error": "a token is required: send Authorization: Bearer TOKEN"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer[Any], token: str | None, host: str) -> ASGIApp:
    """The streamable-HTTP app of ``server`` (path ``/mcp``) behind :class:`TokenGate`."""
    app = server.streamable_http_app(host=host)
    return TokenGate(app, token)
