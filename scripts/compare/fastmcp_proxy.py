"""FastMCP's proxy (fastmcp.server.create_proxy) in front of an MCP server started over stdio,
itself served over stdio: the other gateway of scripts/mcp_compare.py.

    python scripts/compare/fastmcp_proxy.py NODE SERVER_JS
"""

import sys

from fastmcp.server import create_proxy

node, server = sys.argv[1], sys.argv[2]
config = {"mcpServers": {"everything": {"command": node, "args": [server, "stdio"]}}}
create_proxy(config).run(transport="stdio", show_banner=False)
