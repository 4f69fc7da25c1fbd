"""The benchmark's echo tool served by FastMCP (PyPI `fastmcp`), directly or through FastMCP's
proxy, over stdio or Streamable HTTP.

    python fastmcp_echo.py direct stdio
    python fastmcp_echo.py direct http 8801
    python fastmcp_echo.py proxy stdio           # a proxy whose backend is `direct stdio`
    python fastmcp_echo.py proxy http 8802
"""

import sys

from fastmcp import FastMCP
from fastmcp.server import create_proxy


def direct() -> FastMCP:
    mcp = FastMCP("echo")

    @mcp.tool
    def echo(text: str) -> str:
        """Return the given text unchanged."""
        return text

    return mcp


def proxy() -> FastMCP:
    backend = {"mcpServers": {"echo": {"command": sys.executable, "args": [__file__, "direct", "stdio"]}}}
    return create_proxy(backend, name="echo-proxy")


def main() -> None:
    kind, transport = sys.argv[1], sys.argv[2]
    server = direct() if kind == "direct" else proxy()
    if transport == "stdio":
        server.run(transport="stdio", show_banner=False)
    else:
        server.run(transport="http", host="127.0.0.1", port=int(sys.argv[3]), show_banner=False, log_level="warning")


if __name__ == "__main__":
    main()
