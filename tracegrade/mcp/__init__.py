"""``tracegrade mcp``: a Model Context Protocol server, so coding agents (Claude Code, Cursor,
Codex) can ask which cases regressed and why. A face beside ``cli`` and ``web``: :mod:`.tools`
calls the use cases, :mod:`.server` serves them with the official ``mcp`` SDK (the ``mcp``
extra)."""

from typing import TYPE_CHECKING

from tracegrade._util.lazy_import import lazy

_EXPORTS = {
    "Tools": "tracegrade.mcp.tools",
    "build_server": "tracegrade.mcp.server",
}
__all__ = ["Tools", "build_server"]
__getattr__, __dir__ = lazy(_EXPORTS)

if TYPE_CHECKING:
    from tracegrade.mcp.server import build_server
    from tracegrade.mcp.tools import Tools
