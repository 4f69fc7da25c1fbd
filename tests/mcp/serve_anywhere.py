"""`toolgate serve` started over stdio by the official MCP Python SDK (PyPI `mcp` 2.x) the way an
MCP host starts it: a program, arguments, and a working directory of the host's choosing. Lists
the tools, calls `fs_list_dir` on "." and prints the listing, then `ok`. The Rust tests
(tests/tests/install.rs) judge the listing:

    python tests/mcp/serve_anywhere.py --toolgate target/debug/toolgate --cwd / \\
        -- --policy policies/examples/agent.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import os

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


async def run(opts: argparse.Namespace) -> None:
    env = {key: value for key, value in os.environ.items() if key.startswith("TOOLGATE_")}
    params = StdioServerParameters(
        command=opts.toolgate, args=["serve", *opts.serve_args], env=env, cwd=opts.cwd
    )
    async with Client(stdio_client(params)) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        print("tools:", " ".join(names))
        result = await client.call_tool("fs_list_dir", {"path": "."})
        text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
        if result.is_error:
            raise SystemExit(f"fs_list_dir failed: {text}")
        print("listing:")
        print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True, help="the toolgate program")
    parser.add_argument("--cwd", required=True, help="the directory serve runs in")
    parser.add_argument("serve_args", nargs="*", help="after --: the arguments of serve")
    opts = parser.parse_args()
    asyncio.run(asyncio.wait_for(run(opts), 120))
    print("ok")


if __name__ == "__main__":
    main()
