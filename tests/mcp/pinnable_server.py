#!/usr/bin/env python3
"""An MCP server (the `mcp` SDK's MCPServer, on stdio) whose definitions a test changes between
runs, for toolgate's pinned upstream definitions (`toolgate upstream pin`).

Each definition is read from a JSON file when the server starts:

    {"add_description": "...", "subtract": false, "greet_description": "..."}

- tool `add {a, b}` -> a + b, described by `add_description`
- tool `multiply {a, b}` -> a * b (never changes)
- tool `subtract {a, b}` -> a - b, listed only when `subtract` is true
- prompt `greet {name}`, described by `greet_description`
- resource `info://about`

Usage: pinnable_server.py DEFINITIONS_JSON
"""

import json
import sys

from mcp.server.mcpserver import MCPServer

with open(sys.argv[1], encoding="utf-8") as f:
    spec = json.load(f)

server = MCPServer("pinnable")


@server.tool(description=spec.get("add_description", "Adds two numbers."))
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Multiplies two numbers.")
def multiply(a: int, b: int) -> str:
    return str(a * b)


if spec.get("subtract"):

    @server.tool(description="Subtracts b from a.")
    def subtract(a: int, b: int) -> str:
        return str(a - b)


@server.prompt(description=spec.get("greet_description", "A greeting."))
def greet(name: str) -> str:
    return f"Say hello to {name}."


@server.resource("info://about", description="What this server is.")
def about() -> str:
    return "a server whose definitions change"


if __name__ == "__main__":
    server.run()
