"""How `toolgate serve --http` lets a client in, driven by the official MCP Python SDK (PyPI `mcp`
2.x) and raw HTTP (issue 26, item 8): the bearer scheme is read without regard to case, and a
request before `initialize` is told to send `initialize` first, as the README says (only the
revisions with sessions are offered). The Rust tests in tests/tests/serve_entry.rs run one
scenario each:

    python tests/mcp/serve_entry.py --toolgate target/debug/toolgate a_lowercase_bearer_scheme_is_accepted
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_clients import INITIALIZE, TESTKIT, check, raw_post, serving, text_of  # noqa: E402


async def a_lowercase_bearer_scheme_is_accepted(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        token = Path(tmp) / "token"
        token.write_text("s3cret-token\n")
        async with serving(opts, TESTKIT, ["--token-file", str(token)]) as server:
            assert server.url
            for scheme in ("BEARER", "Bearer"):
                answer = raw_post(server.url, INITIALIZE, {"authorization": f"{scheme} s3cret-token"})
                check(answer.status_code == 200, f"{scheme}: HTTP {answer.status_code}")
            wrong = raw_post(server.url, INITIALIZE, {"authorization": "bearer s3cret-tokem"})
            check(wrong.status_code == 401, "a wrong token was accepted")
            http = httpx2.AsyncClient(headers={"authorization": "bearer s3cret-token"}, timeout=30)
            async with http, server.client(http_client=http) as client:
                result = await client.call_tool("echo", {"text": "authorized"})
            check(text_of(result) == "authorized", f"with a lowercase scheme: {result}")


async def a_request_before_initialize_is_told_to_initialize_first(opts: argparse.Namespace) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2025-11-25", "io.modelcontextprotocol/clientCapabilities": {}}
    bodies = [
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": meta}},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
    ]
    async with serving(opts, TESTKIT) as server:
        assert server.url
        for body in bodies:
            answer = raw_post(server.url, json.dumps(body).encode(), {"mcp-protocol-version": "2025-11-25"})
            check(answer.status_code == 400, f"{body}: HTTP {answer.status_code} {answer.text}")
            error = answer.json()
            check(error["id"] == body["id"] and error["error"]["code"] == -32600, f"{body}: {error}")
            check(error["error"]["message"].startswith("send initialize first"), f"{body}: {error}")
        # A client that opens with initialize, as the SDKs do, is served.
        async with server.client() as client:
            names = [t.name for t in (await client.list_tools()).tools]
        check("echo" in names, f"after initialize: {names}")


SCENARIOS = {f.__name__: f for f in [
    a_lowercase_bearer_scheme_is_accepted,
    a_request_before_initialize_is_told_to_initialize_first,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    opts.transport = "http"
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 120))
    print("ok")


if __name__ == "__main__":
    main()
