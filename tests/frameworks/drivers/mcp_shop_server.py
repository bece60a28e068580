"""The shop's tools as an MCP server (the official ``mcp`` SDK, stdio transport).

Started by an MCP driver as a subprocess (``python mcp_shop_server.py``): an
``mcp.server.mcpserver.MCPServer`` (mcp 2.x's name for ``FastMCP``) serving ``get_order`` and
``track_shipment``, whose bodies are :func:`fwtools.call_tool`. A scripted error is raised as the
SDK's ``ToolError`` (its documented way to report an expected failure: the client gets a
``CallToolResult`` with ``isError`` and the text ``Error executing tool <tool>: <message>``;
any other exception would reach the client without its message). The process exports its
own spans (OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT``, from the environment the driver passes
on): the SDK's built-in OpenTelemetry middleware makes a SERVER span ``tools/call <tool>`` per
call, parented by the W3C trace context the client put in the request's ``_meta``.
"""

from __future__ import annotations

from fwtools import ToolFailure, call_tool, setup_otel, shutdown, tool_spec


def run_tool(name: str, arguments: dict[str, str]) -> str:
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return call_tool(name, arguments)
    except ToolFailure as exc:
        raise ToolError(str(exc)) from exc


def build_server():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("shop")

    @server.tool(description=tool_spec("get_order")["description"])
    def get_order(order_id: str) -> str:
        return run_tool("get_order", {"order_id": order_id})

    @server.tool(description=tool_spec("track_shipment")["description"])
    def track_shipment(tracking_id: str) -> str:
        return run_tool("track_shipment", {"tracking_id": tracking_id})

    return server


def main() -> None:
    tracer_provider, _ = setup_otel()
    try:
        build_server().run("stdio")
    finally:
        shutdown(tracer_provider)


if __name__ == "__main__":
    main()
