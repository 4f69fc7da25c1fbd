"""Makes tool calls through `toolgate serve` with the official MCP Python SDK, for the audit
log tests (tests/tests/audit.rs):

    python tests/mcp/audit_calls.py --toolgate target/debug/toolgate --transport http \
        --policy POLICY < calls.json

stdin is a JSON list of [tool, arguments]; stdout a JSON list of {"is_error", "text"}, one per
call, in order (with `--meta`, also "toolgate": the result's `_meta.toolgate`). The server is stopped (SIGTERM) before the script prints.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from serve_clients import serving, text_of


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--policy", required=True)
    parser.add_argument(
        "--meta", action="store_true", help="also print each result's _meta.toolgate"
    )
    opts = parser.parse_args()
    calls = json.load(sys.stdin)
    out = []
    async with serving(opts, Path(opts.policy)) as server, server.client() as client:
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments)
            answer = {"is_error": bool(result.is_error), "text": text_of(result)}
            if opts.meta:
                answer["toolgate"] = (result.meta or {}).get("toolgate")
            out.append(answer)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
