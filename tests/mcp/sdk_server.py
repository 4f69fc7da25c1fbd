"""An upstream MCP server built on the official Python SDK (PyPI `mcp` 2.3), which speaks every
revision: the `initialize` handshake of the 2025 revisions and 2026-07-28 (`server/discover`,
requests that carry their own `_meta`). toolgate's tests put it behind `toolgate serve` to see
which revision toolgate speaks to it.

    python tests/mcp/sdk_server.py                  # stdio
    python tests/mcp/sdk_server.py --http PORT      # Streamable HTTP on 127.0.0.1:PORT (0: any;
                                                    # prints "listening on URL" on stdout)

Tools:
  echo {text}      -> text
  revision {}      -> the protocol revision of the request ("2026-07-28", "2025-11-25", ...)
  add_tool {name}  -> adds an echo-like tool `name` and tells the client the tool list changed
"""

from __future__ import annotations

import argparse
import socket
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("toolgate-test-sdk-server")


@server.tool()
def echo(text: str) -> str:
    """Answers with the text it was given."""
    return text


@server.tool()
def revision(ctx: Context) -> str:
    """Answers with the protocol revision the request was made on."""
    return ctx.protocol_version or "unknown"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Adds an echo-like tool under `name` and says the tool list changed."""

    def added(text: str) -> str:
        return text

    server.add_tool(added, name=name, description=f"echo, added as {name}")
    if ctx.protocol_version == "2026-07-28":
        # To the clients listening (subscriptions/listen).
        await ctx.notify_tools_changed()
    else:
        # To the connection (notifications/tools/list_changed).
        await ctx.request_context.session.send_tool_list_changed()
    return f"added {name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    opts = parser.parse_args()
    if opts.http is None:
        server.run("stdio")
        return
    port = opts.http
    if port == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    sys.stdout.flush()
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
