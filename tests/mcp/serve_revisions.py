"""`toolgate serve` on each protocol revision, driven by the official MCP Python SDK (PyPI `mcp`
2.3) in its default mode (`auto`: it asks `server/discover` and speaks 2026-07-28 when the server
does) and in `legacy` mode (the `initialize` handshake, 2025-11-25); and the paged lists.

Each scenario checks one behaviour and exits 0 when it holds, printing `ok` (after one JSON line
of facts for the Rust test in tests/tests/serve_revisions.rs to check):

    python tests/mcp/serve_revisions.py --toolgate target/debug/toolgate --transport http --mode auto connect_list_call
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[2]
TESTKIT = REPO / "tests" / "mcp" / "policies" / "testkit.yaml"
CATALOG = REPO / "policies" / "examples" / "catalog.jsonl"
SESSION_KEY = "toolgate/session"


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def kind_of(result: types.CallToolResult) -> str | None:
    return ((result.meta or {}).get("toolgate") or {}).get("error_kind")


class Server:
    """One `toolgate serve` of `policy`: over HTTP one process for every client, over stdio one
    per client."""

    def __init__(self, opts: argparse.Namespace, policy: Path, workdir: Path, extra: list[str] | None = None):
        self.opts = opts
        self.policy = policy
        self.log = workdir / "serve.log"
        self.extra = extra or []
        self.env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "info")}
        self.env.setdefault("TOOLGATE_RESULTS_DIR", str(workdir / "results"))
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def args(self) -> list[str]:
        return ["serve", "--policy", str(self.policy), *self.extra]

    def __enter__(self) -> "Server":
        if self.opts.transport == "http":
            log = open(self.log, "wb")
            self.process = subprocess.Popen(
                [self.opts.toolgate, *self.args(), "--http", "127.0.0.1:0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=self.env,
            )
            deadline = time.monotonic() + 60
            while self.url is None:
                # The whole line only: a line read while serve writes it would give a cut URL.
                found = re.search(r"listening on (http://\S+)\r?\n", self.log.read_text(errors="replace"))
                if found:
                    self.url = found.group(1)
                    break
                check(self.process.poll() is None, f"serve exited early:\n{self.log.read_text()}")
                check(time.monotonic() < deadline, "serve did not say where it listens within 60 s")
                time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                raise AssertionError("serve did not stop within 30 s of SIGTERM")

    def client(self, **kwargs: Any) -> Client:
        kwargs.setdefault("mode", self.opts.mode)
        if self.opts.transport == "stdio":
            params = StdioServerParameters(command=self.opts.toolgate, args=self.args(), env=self.env)
            return Client(stdio_client(params, errlog=open(self.log, "a")), **kwargs)
        assert self.url is not None
        return Client(streamable_http_client(self.url), **kwargs)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def policy_file(tmp: Path, text: str) -> Path:
    policy = tmp / "policy.yaml"
    policy.write_text(text)
    return policy


def searchable(tmp: Path, extra: str = "") -> Path:
    """The testkit plugin's tools behind tool_search."""
    return policy_file(
        tmp,
        f"version: 1\nplugins: [{{name: testkit, searchable: true}}]\nsearch: {{catalogs: [{CATALOG}]}}\n{extra}",
    )


async def all_tools(client: Client, meta: dict[str, Any] | None = None) -> tuple[list[str], int]:
    """Every tool, following the cursors; and how many pages it took."""
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await client.list_tools(cursor=cursor, meta=meta, cache_mode="bypass")
        names += [t.name for t in page.tools]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            return names, pages


# ---------------------------------------------------------------------------------------------
# scenarios


async def connect_list_call(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Connect, list, call: the revision the client got and what it saw."""
    with Server(opts, TESTKIT, tmp) as server:
        async with server.client() as client:
            names, pages = await all_tools(client)
            echoed = await client.call_tool("echo", {"text": "hello on any revision"})
            protocol = client.protocol_version
    check(echoed.is_error is False and text_of(echoed) == "hello on any revision", f"echo: {echoed}")
    return {"protocol": protocol, "tools": len(names), "pages": pages}


async def tools_come_in_pages(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """With serve.page_size 5, the 14 testkit tools come in pages of 5, 5 and 4, each tool once,
    following nextCursor."""
    policy = policy_file(tmp, "version: 1\nplugins: [{name: testkit}]\nserve: {page_size: 5}\n")
    with Server(opts, policy, tmp) as server:
        async with server.client() as client:
            sizes = []
            names: list[str] = []
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                sizes.append(len(page.tools))
                names += [t.name for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
    check(sizes == [5, 5, 4], f"page sizes {sizes}")
    check(len(set(names)) == 14 and names == sorted(names), f"tools over the pages: {names}")
    return {"sizes": sizes}


async def a_bad_cursor_is_invalid_params(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """A cursor the server did not give is a JSON-RPC error -32602 that says to list again."""
    with Server(opts, TESTKIT, tmp) as server:
        async with server.client() as client:
            try:
                await client.list_tools(cursor="not-a-cursor-of-toolgate", cache_mode="bypass")
            except MCPError as e:
                code, message = e.error.code, e.error.message
            else:
                raise AssertionError("a bogus cursor listed tools")
            # The connection is still good.
            names, _ = await all_tools(client)
    check(code == -32602, f"error code {code}")
    check("bad cursor" in message and "without a cursor" in message, f"message {message!r}")
    check(len(names) == 14, f"after the error: {names}")
    return {"code": code}


async def a_named_stateless_session_keeps_what_it_found(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Over HTTP on 2026-07-28 no request has a session; one that names `toolgate/session` in
    `_meta` gets that session: what it found stays found for it, and no other id sees it."""
    with Server(opts, searchable(tmp), tmp) as server:
        async with server.client() as client:
            mine = {SESSION_KEY: "client-a-7f3e9c"}
            theirs = {SESSION_KEY: "client-b-1d2b4a"}
            found = await client.call_tool("tool_search", {"query": "select:echo"}, meta=mine)
            check(found.is_error is False, f"search: {found}")
            my_list, _ = await all_tools(client, mine)
            their_list, _ = await all_tools(client, theirs)
            default_list, _ = await all_tools(client)
            mine_echo = await client.call_tool("echo", {"text": "mine"}, meta=mine)
            their_echo = await client.call_tool("echo", {"text": "theirs"}, meta=theirs)
            protocol = client.protocol_version
    check("echo" in my_list, f"the searching session lists {my_list}")
    check(their_list == ["tool_search"], f"another session lists {their_list}")
    check(default_list == ["tool_search"], f"the default session lists {default_list}")
    check(text_of(mine_echo) == "mine", f"echo in the searching session: {mine_echo}")
    check(kind_of(their_echo) == "denied", f"echo in another session: {their_echo}")
    return {"protocol": protocol}


async def without_an_id_requests_share_the_default_session(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Over HTTP on 2026-07-28 a client that names no session is in its principal's default
    session: a tool it found stays found on its next request (the official SDKs send no id)."""
    with Server(opts, searchable(tmp), tmp) as server:
        async with server.client() as client:
            await client.call_tool("tool_search", {"query": "select:echo"})
            listed, _ = await all_tools(client)
            echoed = await client.call_tool("echo", {"text": "still found"})
            protocol = client.protocol_version
    check("echo" in listed, f"after the search: {listed}")
    check(text_of(echoed) == "still found", f"echo: {echoed}")
    return {"protocol": protocol}


async def an_offloaded_result_is_read_only_in_its_session(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """A large result offloaded in one stateless session is read back in it, and refused in
    another."""
    policy = policy_file(tmp, "version: 1\nplugins: [{name: testkit}]\nreduction: {max_result_bytes: 2000}\n")
    with Server(opts, policy, tmp) as server:
        async with server.client() as client:
            mine = {SESSION_KEY: "reader-5e1"}
            big = await client.call_tool("big_output", {"bytes": 10000}, meta=mine)
            result_id = ((big.meta or {}).get("toolgate") or {}).get("result_id")
            check(isinstance(result_id, str), f"no result_id: {big.meta}")
            page = await client.call_tool("read_tool_result", {"id": result_id}, meta=mine)
            other = await client.call_tool("read_tool_result", {"id": result_id}, meta={SESSION_KEY: "intruder-9"})
            protocol = client.protocol_version
    check(page.is_error is False and "characters 0-10000 of 10000" in text_of(page), f"read back: {text_of(page)[-200:]}")
    check(other.is_error is True and kind_of(other) == "access_denied", f"read from another session: {other}")
    return {"protocol": protocol}


async def listeners_hear_of_found_tools(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """On 2026-07-28 a client that listens for tool list changes (subscriptions/listen) hears
    when its session found a tool."""
    with Server(opts, searchable(tmp), tmp) as server:
        async with server.client() as client:
            async with client.listen(tools_list_changed=True) as sub:
                check(bool(sub.honored.tools_list_changed), f"listen honored {sub.honored}")
                found = await client.call_tool("tool_search", {"query": "select:echo"})
                check(found.is_error is False, f"search: {found}")
                event = await asyncio.wait_for(sub.__anext__(), 10)
            protocol = client.protocol_version
    check(type(event).__name__ == "ToolsListChanged", f"event {event!r}")
    return {"protocol": protocol}


async def listeners_hear_of_a_reload(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """On 2026-07-28 a listener hears that the tool list changed when the policy is edited."""
    base = "version: 1\nplugins: [{name: testkit}]\n"
    policy = policy_file(tmp, base)
    with Server(opts, policy, tmp) as server:
        async with server.client() as client:
            async with client.listen(tools_list_changed=True) as sub:
                policy.write_text(base + "aliases:\n  echo: {names: [say]}\n")
                event = await asyncio.wait_for(sub.__anext__(), 10)
            said = await client.call_tool("say", {"text": "via the new alias"})
            protocol = client.protocol_version
    check(type(event).__name__ == "ToolsListChanged", f"event {event!r}")
    check(text_of(said) == "via the new alias", f"after the reload: {said}")
    return {"protocol": protocol}


async def the_other_lists_come_in_pages(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Resources, resource templates and prompts (server-everything's, behind serve) come in
    pages of serve.page_size too, each item once; a cursor of one list is refused by another
    with -32602."""
    policy = policy_file(
        tmp,
        "version: 1\nmcp_servers:\n  - name: everything\n    command: [mcp-server-everything]\n"
        "serve: {page_size: 2}\n",
    )

    async def every_page(fetch: Callable[[str | None], Any], items: str) -> tuple[list[Any], int]:
        got: list[Any] = []
        cursor = None
        pages = 0
        while True:
            page = await fetch(cursor)
            chunk = getattr(page, items)
            check(len(chunk) <= 2, f"a page of {len(chunk)} {items}")
            got += chunk
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                return got, pages

    with Server(opts, policy, tmp) as server:
        async with server.client() as client:
            resources, resource_pages = await every_page(
                lambda c: client.list_resources(cursor=c, cache_mode="bypass"), "resources"
            )
            templates, template_pages = await every_page(
                lambda c: client.list_resource_templates(cursor=c, cache_mode="bypass"), "resource_templates"
            )
            prompts, prompt_pages = await every_page(
                lambda c: client.list_prompts(cursor=c, cache_mode="bypass"), "prompts"
            )
            tools = await client.list_tools(cache_mode="bypass")
            check(tools.next_cursor is not None, "server-everything has more than 2 tools")
            try:
                await client.list_resources(cursor=tools.next_cursor, cache_mode="bypass")
            except MCPError as e:
                refused = (e.error.code, e.error.message)
            else:
                raise AssertionError("a cursor of tools/list listed resources")
    uris = [r.uri for r in resources]
    check(len(uris) == len(set(uris)) and uris == sorted(uris), f"resources over the pages: {uris}")
    names = [p.name for p in prompts]
    check(len(names) == len(set(names)) and "everything.simple-prompt" in names, f"prompts: {names}")
    check(len(templates) >= 2, f"templates: {templates}")
    check(refused[0] == -32602 and "belongs to tools/list" in refused[1], f"refused with {refused}")
    return {"pages": {"resources": resource_pages, "templates": template_pages, "prompts": prompt_pages}}


# --- upstream servers on each revision ---------------------------------------------------------

SDK_SERVER = REPO / "tests" / "mcp" / "sdk_server.py"


class Upstream:
    """tests/mcp/sdk_server.py (the Python SDK's server, every revision), as the policy entry of
    a `command` server or, over HTTP, a running process and the entry of its `url`."""

    def __init__(self, how: str, protocol: str):
        self.how = how
        self.protocol = protocol
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        """The policy's mcp_servers entry."""
        if self.how == "stdio":
            where = f"command: {json.dumps([sys.executable, str(SDK_SERVER)])}"
        else:
            self.process = subprocess.Popen(
                [sys.executable, str(SDK_SERVER), "--http", "0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )
            assert self.process.stdout is not None
            line = self.process.stdout.readline()
            found = re.search(r"listening on (http://\S+)", line)
            check(found is not None, f"the SDK server said {line!r}")
            assert found is not None
            where = f"url: {found.group(1)}"
            wait_until_listening(found.group(1))
        return f"  - name: sdk\n    {where}\n    protocol: \"{self.protocol}\"\n"

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)


def wait_until_listening(url: str) -> None:
    """Until a TCP connection to the URL's port is accepted (uvicorn binds after it prints)."""
    port = int(re.search(r":(\d+)/", url).group(1))  # type: ignore[union-attr]
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            check(time.monotonic() < deadline, f"nothing listens on {url}")
            time.sleep(0.05)


async def an_upstream_is_spoken_to_on_its_revision(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """serve in front of the SDK's server (over `--upstream` stdio or HTTP), with the policy's
    `protocol` (`--upstream-protocol`): the revision the upstream saw, and a call through."""
    with Upstream(opts.upstream, opts.upstream_protocol) as entry:
        policy = policy_file(tmp, "version: 1\nmcp_servers:\n" + entry)
        with Server(opts, policy, tmp) as server:
            async with server.client() as client:
                names, _ = await all_tools(client)
                revision = await client.call_tool("sdk.revision", {})
                echoed = await client.call_tool("sdk.echo", {"text": "through toolgate"})
    check("sdk.echo" in names and "sdk.revision" in names, f"tools: {names}")
    check(text_of(echoed) == "through toolgate", f"echo: {echoed}")
    return {"upstream_revision": text_of(revision)}


async def an_upstream_tool_list_change_reaches_the_client(opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """The SDK's server adds a tool and says so (on 2026-07-28, on the listen stream toolgate
    keeps open): serve fetches the new list, and its own client hears of it and can call it."""
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with Upstream(opts.upstream, opts.upstream_protocol) as entry:
        policy = policy_file(tmp, "version: 1\nmcp_servers:\n" + entry)
        with Server(opts, policy, tmp) as server:
            async with server.client(message_handler=on_message) as client:
                revision = await client.call_tool("sdk.revision", {})
                added = await client.call_tool("sdk.add_tool", {"name": "late"})
                check(added.is_error is False, f"add_tool: {added}")
                await asyncio.wait_for(changed.wait(), 20)
                names, _ = await all_tools(client)
                late = await client.call_tool("sdk.late", {"text": "new"})
    check("sdk.late" in names, f"after the change: {names}")
    check(text_of(late) == "new", f"the new tool: {late}")
    return {"upstream_revision": text_of(revision)}


SCENARIOS = {f.__name__: f for f in [
    connect_list_call, tools_come_in_pages, a_bad_cursor_is_invalid_params,
    a_named_stateless_session_keeps_what_it_found, without_an_id_requests_share_the_default_session,
    an_offloaded_result_is_read_only_in_its_session, listeners_hear_of_found_tools, listeners_hear_of_a_reload,
    an_upstream_is_spoken_to_on_its_revision, an_upstream_tool_list_change_reaches_the_client,
    the_other_lists_come_in_pages,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--mode", choices=["auto", "legacy"], default="auto")
    parser.add_argument("--upstream", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--upstream-protocol", choices=["auto", "2026-07-28"], default="auto")
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()

    async def run() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp:
            return await SCENARIOS[opts.scenario](opts, Path(tmp))

    facts = asyncio.run(asyncio.wait_for(run(), 120))
    print(json.dumps(facts))
    print("ok")


if __name__ == "__main__":
    main()
