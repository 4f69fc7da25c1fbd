"""`toolgate serve` driven by the official MCP Python SDK (PyPI `mcp`), over stdio and HTTP.

Each scenario checks one behaviour and exits 0 when it holds; a failed check raises with a
message that says what was expected and what came back. The Rust tests in
tests/tests/serve.rs run one scenario each:

    python tests/mcp/serve_clients.py --toolgate target/debug/toolgate --transport stdio list_matches_cli

The server runs with its results (and session state) in a fresh folder per scenario, unless
TOOLGATE_RESULTS_DIR is set; its log goes to a file that scenarios read.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
TESTKIT = REPO / "tests" / "mcp" / "policies" / "testkit.yaml"
SEARCH = REPO / "policies" / "examples" / "search.yaml"
CANCEL = REPO / "tests" / "mcp" / "policies" / "one-thread.yaml"
UPSTREAM = REPO / "policies" / "examples" / "mcp-upstream.yaml"
FAKE_UPSTREAM = REPO / "mcp" / "tests" / "fixtures" / "fake_mcp_server.py"
PINNABLE_UPSTREAM = REPO / "tests" / "mcp" / "pinnable_server.py"


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def kind_of(result: types.CallToolResult) -> str | None:
    return ((result.meta or {}).get("toolgate") or {}).get("error_kind")


class Server:
    """One `toolgate serve`: how to connect clients to it, and its log."""

    def __init__(self, toolgate: str, transport: str, policy: Path, workdir: Path, extra: list[str]):
        self.toolgate = toolgate
        self.transport = transport
        self.policy = policy
        self.log = workdir / f"serve-{time.monotonic_ns()}.log"
        self.extra = extra
        self.env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "info")}
        self.env.setdefault("TOOLGATE_RESULTS_DIR", str(workdir / "results"))
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def args(self) -> list[str]:
        return ["serve", "--policy", str(self.policy), *self.extra]

    def start_http(self) -> None:
        log = open(self.log, "wb")
        self.process = subprocess.Popen(
            [self.toolgate, *self.args(), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=self.env,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(r"listening on (http://\S+)", self.log.read_text(errors="replace"))
            if found:
                self.url = found.group(1)
                return
            check(self.process.poll() is None, f"serve exited early:\n{self.log.read_text()}")
            time.sleep(0.02)
        raise AssertionError("serve did not say where it listens within 60 s")

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("serve did not stop within 30 s of SIGTERM")

    def client(self, http_client: httpx2.AsyncClient | None = None, **kwargs: Any) -> Client:
        """A client on its own connection: over stdio its own serve process, over HTTP its
        own MCP session. These scenarios are about sessions and the notifications of a
        connection, so the client speaks a 2025 revision (`initialize`) unless a scenario asks
        for `mode="auto"`; the 2026-07-28 ones are in tests/mcp/serve_revisions.py."""
        kwargs.setdefault("mode", "legacy")
        if self.transport == "stdio":
            params = StdioServerParameters(command=self.toolgate, args=self.args(), env=self.env)
            errlog = open(self.log, "a")
            return Client(stdio_client(params, errlog=errlog), **kwargs)
        assert self.url is not None
        return Client(streamable_http_client(self.url, http_client=http_client), **kwargs)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def pid(self) -> int:
        """The serve process (HTTP; over stdio, the one started last by a client)."""
        if self.process is not None:
            return self.process.pid
        found = subprocess.run(
            ["pgrep", "-n", "-f", f"serve --policy {self.policy}"], capture_output=True, text=True
        )
        check(found.returncode == 0, "no stdio serve process found")
        return int(found.stdout.split()[0])


@contextlib.asynccontextmanager
async def serving(opts: argparse.Namespace, policy: Path, extra: list[str] | None = None) -> AsyncIterator[Server]:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(opts.toolgate, opts.transport, policy, Path(tmp), extra or [])
        if opts.transport == "http":
            server.start_http()
        try:
            yield server
        finally:
            code = server.stop()
            if code is not None:
                check(code == 0, f"serve ended with exit code {code} on SIGTERM:\n{server.log_text()}")


async def wait_for(predicate: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


# ---------------------------------------------------------------------------------------------
# scenarios


async def list_matches_cli(opts: argparse.Namespace) -> None:
    """tools/list shows exactly what `toolgate tools` says the model sees."""
    cli = subprocess.run(
        [opts.toolgate, "tools", "--policy", str(TESTKIT), "--json"], capture_output=True, text=True, check=True
    )
    want = {t["function"]["name"]: t["function"] for t in json.loads(cli.stdout)}
    async with serving(opts, TESTKIT) as server, server.client() as client:
        listed = (await client.list_tools()).tools
    got = {t.name: t for t in listed}
    check(sorted(got) == sorted(want), f"tools/list {sorted(got)} != toolgate tools {sorted(want)}")
    for name, spec in want.items():
        check(got[name].description == spec["description"], f"{name}: description differs")
        check(got[name].input_schema == spec["parameters"], f"{name}: schema differs")


async def call_returns_the_tool_text(opts: argparse.Namespace) -> None:
    async with serving(opts, TESTKIT) as server, server.client() as client:
        result = await client.call_tool("echo", {"text": "hello from MCP"})
    check(result.is_error is False, f"echo failed: {result}")
    check(text_of(result) == "hello from MCP", f"echo said {text_of(result)!r}")


async def failures_are_error_results(opts: argparse.Namespace) -> None:
    """Every kind of failure is a tool result with isError and the stable kind in _meta, never
    a protocol error."""
    cases = [
        ("ech", {"text": "x"}, "unknown_tool", "echo"),
        ("fail", {"message": "boom"}, "tool_error", "boom"),
        ("panic", {}, "tool_execution_panic", "panic"),
        ("echo", {"text": 5}, "invalid_arguments", "expected a string"),
        ("echo", {"text": "secret"}, "denied", "no secrets"),
        ("sleep", {"ms": 5000}, "timeout", "timed out"),
    ]
    async with serving(opts, TESTKIT) as server, server.client() as client:
        for name, args, kind, needle in cases:
            result = await client.call_tool(name, args)
            check(result.is_error is True, f"{name} {args}: not an error result: {result}")
            check(kind_of(result) == kind, f"{name} {args}: kind {kind_of(result)!r}, want {kind!r}")
            check(needle in text_of(result), f"{name} {args}: {needle!r} not in {text_of(result)!r}")
        # The connection is still good after all of that.
        after = await client.call_tool("echo", {"text": "still here"})
        check(text_of(after) == "still here", "the server stopped answering after the failures")


async def images_are_image_content(opts: argparse.Namespace) -> None:
    async with serving(opts, TESTKIT) as server, server.client() as client:
        result = await client.call_tool("multimodal", {})
    kinds = [c.type for c in result.content]
    check(kinds == ["text", "image", "text"], f"content kinds {kinds}")
    image = result.content[1]
    check(isinstance(image, types.ImageContent) and image.mime_type == "image/png", f"image part {image}")
    check(image.data.startswith("iVBORw0KGgo"), "the image data is not a base64 PNG")


async def progress_becomes_notifications(opts: argparse.Namespace) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with serving(opts, TESTKIT) as server, server.client() as client:
        result = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    check(text_of(result) == "done: 3 steps", f"progress said {text_of(result)!r}")
    # Updates that come while the client is still taking the one before are folded into the
    # next notification, whose `progress` counts them all; the newest always comes before the
    # result.
    check(seen and seen[-1] == (3, "step 3 of 3"), f"progress seen: {seen}")
    check(all(m == f"step {int(p)} of 3" for p, m in seen), f"progress does not count the updates: {seen}")
    check([p for p, _ in seen] == sorted(set(p for p, _ in seen)), f"progress not increasing: {seen}")


async def cancellation_reaches_the_tool(opts: argparse.Namespace) -> None:
    """The plugin has one thread. A 60 s sleep holds it; the client gives up on the call (and
    sends notifications/cancelled). Only if the cancellation reaches the tool does the thread
    come back, so that the next call of the plugin runs instead of being `overloaded`."""
    async with serving(opts, CANCEL) as server, server.client() as client:
        held = await client.call_tool("echo", {"text": "x"})
        check(held.is_error is False, f"echo failed before the test: {held}")
        with contextlib.suppress(Exception):
            await client.call_tool("sleep", {"ms": 60000}, read_timeout_seconds=0.5)
        results = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            result = await client.call_tool("echo", {"text": "after"})
            results.append(kind_of(result))
            if result.is_error is False:
                break
            check(kind_of(result) == "overloaded", f"unexpected failure: {result}")
            await asyncio.sleep(0.05)
        check(results[-1] is None, f"the plugin's thread never came back: {len(results)} calls, all {results[-1]}")


async def search_makes_tools_visible_and_says_so(opts: argparse.Namespace) -> None:
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with serving(opts, SEARCH) as server, server.client(message_handler=on_message) as client:
        before = [t.name for t in (await client.list_tools()).tools]
        check(before == ["tool_search"], f"before search: {before}")
        hidden = await client.call_tool("echo", {"text": "x"})
        check(kind_of(hidden) == "denied", f"echo before search: {hidden}")
        found = await client.call_tool("tool_search", {"query": "select:echo"})
        check(found.is_error is False, f"search failed: {found}")
        await asyncio.wait_for(changed.wait(), 10)
        # The client's own cache is dropped by the notification: a plain list sees the change.
        after = [t.name for t in (await client.list_tools()).tools]
        check("echo" in after, f"after search: {after}")
        echoed = await client.call_tool("echo", {"text": "found"})
        check(text_of(echoed) == "found", f"echo after search: {echoed}")


async def sessions_are_isolated(opts: argparse.Namespace) -> None:
    async with serving(opts, SEARCH) as server:
        async with server.client() as first, server.client() as second:
            await first.call_tool("tool_search", {"query": "select:echo"})
            mine = [t.name for t in (await first.list_tools()).tools]
            theirs = [t.name for t in (await second.list_tools()).tools]
            check("echo" in mine, f"the searching session does not see echo: {mine}")
            check(theirs == ["tool_search"], f"the other session sees {theirs}")
            denied = await second.call_tool("echo", {"text": "x"})
            check(kind_of(denied) == "denied", f"the other session could call echo: {denied}")


# --- reload ----------------------------------------------------------------------------------

RELOAD_BASE = """version: 1
dispatch: {timeout: 30s}
plugins:
  - name: testkit
"""


async def reload_applies_a_valid_edit(opts: argparse.Namespace) -> None:
    """A valid edit applies to the next call, and clients are told their list changed."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(RELOAD_BASE)
        changed = asyncio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with serving(opts, policy) as server, server.client(message_handler=on_message) as client:
            check((await client.call_tool("echo", {"text": "a"})).is_error is False, "echo before the edit")
            policy.write_text(RELOAD_BASE + "rules:\n  deny:\n    - tools: [echo]\n      reason: echo is off\n")
            await asyncio.wait_for(changed.wait(), 10)
            denied = await client.call_tool("echo", {"text": "a"})
            check(kind_of(denied) == "denied" and "echo is off" in text_of(denied), f"after the edit: {denied}")
            check("policy reloaded" in server.log_text(), "the reload was not logged")


async def reload_keeps_the_last_good_policy(opts: argparse.Namespace) -> None:
    """An invalid edit is logged with its position and changes nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(RELOAD_BASE)
        async with serving(opts, policy) as server, server.client() as client:
            policy.write_text(RELOAD_BASE + "dispatch:\n  timeout: soon\n")
            await wait_for(lambda: "policy reload failed" in server.log_text(), "the failed reload in the log")
            check(f"{policy}:" in server.log_text() and re.search(r"policy\.yaml:\d+:\d+:", server.log_text()) is not None,
                  f"no file:line:col error in the log:\n{server.log_text()}")
            result = await client.call_tool("echo", {"text": "still served"})
            check(text_of(result) == "still served", f"after a bad edit: {result}")


async def reload_on_sighup(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(RELOAD_BASE)
        async with serving(opts, policy, ["--no-watch"]) as server, server.client() as client:
            await client.call_tool("echo", {"text": "a"})
            policy.write_text(RELOAD_BASE + "aliases:\n  echo: {names: [say]}\n")
            await asyncio.sleep(0.3)
            before = await client.call_tool("say", {"text": "a"})
            check(kind_of(before) == "unknown_tool", f"--no-watch reloaded anyway: {before}")
            os.kill(server.pid(), signal.SIGHUP)
            await wait_for(lambda: "policy reloaded" in server.log_text(), "the SIGHUP reload")
            after = await client.call_tool("say", {"text": "via alias"})
            check(text_of(after) == "via alias", f"after SIGHUP: {after}")


async def in_flight_calls_finish_on_the_old_policy(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(RELOAD_BASE)
        async with serving(opts, policy) as server, server.client() as client:
            running = asyncio.ensure_future(client.call_tool("sleep", {"ms": 1500}))
            await asyncio.sleep(0.3)
            policy.write_text(RELOAD_BASE + "tools:\n  sleep: {timeout: 100ms}\n")
            await wait_for(lambda: "policy reloaded" in server.log_text(), "the reload")
            new = await client.call_tool("sleep", {"ms": 1500})
            check(kind_of(new) == "timeout", f"a new call did not get the new timeout: {new}")
            old = await running
            check(text_of(old) == "slept 1500 ms", f"the call in flight did not finish under the old policy: {old}")


# --- HTTP safety -----------------------------------------------------------------------------


def raw_post(url: str, body: bytes, headers: dict[str, str] | None = None) -> httpx2.Response:
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=10) as http:
        return http.post(url, content=body, headers={**base, **(headers or {})})


INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}).encode()


async def bad_input_gets_json_rpc_errors(opts: argparse.Namespace) -> None:
    async with serving(opts, TESTKIT) as server:
        assert server.url
        for body, code in [(b"{not json", -32700), (b'{"id": 3, "hello": 1}', -32600), (b"[1, 2]", -32600)]:
            answer = raw_post(server.url, body)
            check(answer.status_code == 400, f"{body!r}: HTTP {answer.status_code}")
            error = answer.json()
            check(error.get("jsonrpc") == "2.0" and error["error"]["code"] == code, f"{body!r}: {error}")
        big = raw_post(server.url, b'{"pad": "' + b"x" * (5 << 20) + b'"}')
        check(big.status_code == 413 and big.json()["error"]["code"] == -32600, f"a 5 MiB body: {big.status_code}")
        async with server.client() as client:
            result = await client.call_tool("echo", {"text": "alive"})
        check(text_of(result) == "alive", "the server did not survive the bad input")


async def foreign_origins_are_refused(opts: argparse.Namespace) -> None:
    async with serving(opts, TESTKIT, ["--allow-origin", "http://app.example:8080"]) as server:
        assert server.url
        evil = raw_post(server.url, INITIALIZE, {"origin": "http://evil.example"})
        check(evil.status_code == 403, f"a foreign origin got HTTP {evil.status_code}")
        rebinding = raw_post(server.url, INITIALIZE, {"host": "evil.example"})
        check(rebinding.status_code == 403, f"a foreign Host got HTTP {rebinding.status_code}")
        allowed = raw_post(server.url, INITIALIZE, {"origin": "http://app.example:8080"})
        check(allowed.status_code == 200, f"the allowed origin got HTTP {allowed.status_code}")


async def a_token_is_required_when_configured(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        token = Path(tmp) / "token"
        token.write_text("s3cret-token\n")
        async with serving(opts, TESTKIT, ["--token-file", str(token)]) as server:
            assert server.url
            check(raw_post(server.url, INITIALIZE).status_code == 401, "no token was accepted")
            wrong = raw_post(server.url, INITIALIZE, {"authorization": "Bearer s3cret-tokem"})
            check(wrong.status_code == 401, "a wrong token was accepted")
            http = httpx2.AsyncClient(headers={"authorization": "Bearer s3cret-token"}, timeout=30)
            async with http, server.client(http_client=http) as client:
                result = await client.call_tool("echo", {"text": "authorized"})
            check(text_of(result) == "authorized", f"with the token: {result}")


async def sessions_are_bounded(opts: argparse.Namespace) -> None:
    async with serving(opts, TESTKIT, ["--max-sessions", "1"]) as server:
        assert server.url
        async with server.client() as first:
            await first.list_tools()
            refused = raw_post(server.url, INITIALIZE)
            check(refused.status_code == 503, f"a second session got HTTP {refused.status_code}")
            check(refused.json()["error"]["code"] == -32000, f"not a JSON-RPC error: {refused.text}")
        # Closing the first session makes room again.
        async with server.client() as again:
            await again.list_tools()


# --- two instances on one store ---------------------------------------------------------------


def shared_store_policy(tmp: Path) -> Path:
    """search.yaml's catalog with results and session state on the S3 test server."""
    endpoint = os.environ.get("TOOLGATE_TEST_S3_ENDPOINT")
    check(endpoint is not None, "TOOLGATE_TEST_S3_ENDPOINT is unset: start scripts/s3-server.sh")
    bucket = os.environ["TOOLGATE_TEST_S3_BUCKET"]
    prefix = f"serve-{time.time_ns()}"
    text = SEARCH.read_text().replace("catalogs: [catalog.jsonl]", f"catalogs: [{SEARCH.parent / 'catalog.jsonl'}]")
    text += f"""
reduction:
  store: s3://{bucket}/{prefix}
  store_options:
    endpoint: "{endpoint}"
    region: "{os.environ['TOOLGATE_TEST_S3_REGION']}"
    access_key_id: "{os.environ['TOOLGATE_TEST_S3_ACCESS_KEY_ID']}"
    secret_access_key: "{os.environ['TOOLGATE_TEST_S3_SECRET_ACCESS_KEY']}"
    allow_http: "true"
"""
    policy = tmp / "shared.yaml"
    policy.write_text(text)
    return policy


class Balancer(httpx2.AsyncBaseTransport):
    """A load balancer in miniature: sends every request to the instance `target` names."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.target = 0
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(port=self.ports[self.target])
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def two_instances_share_a_session(opts: argparse.Namespace) -> None:
    """Search on one instance, call on the other, with one MCP session behind a balancer
    (HTTP), or one --session name (stdio)."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = shared_store_policy(Path(tmp))
        if opts.transport == "stdio":
            async with serving(opts, policy, ["--session", "shared-1"]) as one:
                async with one.client() as first:
                    await first.call_tool("tool_search", {"query": "select:echo"})
                async with one.client() as second:
                    listed = [t.name for t in (await second.list_tools()).tools]
                    check("echo" in listed, f"the second instance lists {listed}")
                    result = await second.call_tool("echo", {"text": "shared"})
                    check(text_of(result) == "shared", f"the second instance: {result}")
            return
        async with serving(opts, policy) as a, serving(opts, policy) as b:
            assert a.url and b.url
            balancer = Balancer([httpx2.URL(a.url).port, httpx2.URL(b.url).port])
            http = httpx2.AsyncClient(transport=balancer, timeout=30)
            async with http, a.client(http_client=http) as client:
                found = await client.call_tool("tool_search", {"query": "select:echo"})
                check(found.is_error is False, f"search on the first instance: {found}")
                balancer.target = 1
                result = await client.call_tool("echo", {"text": "across instances"})
                check(text_of(result) == "across instances", f"call on the second instance: {result}")
                listed = [t.name for t in (await client.list_tools()).tools]
                check("echo" in listed, f"the second instance lists {listed}")


# --- upstream MCP servers behind serve (mcp_servers:) ----------------------------------------


async def upstream_tools_are_served_under_the_policy(opts: argparse.Namespace) -> None:
    """The shipped mcp-upstream.yaml in front of PyPI's mcp-server-time and npm's
    server-everything: their tools are listed under model-facing names, an alias reaches the
    time server, a deny rule refuses a tool, and a large result is offloaded and paged back."""
    async with serving(opts, UPSTREAM) as server, server.client() as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        for name in ["time_get_current_time", "everything_echo", "read_tool_result"]:
            check(name in listed, f"{name} not in tools/list: {listed}")
        now = await client.call_tool("now", {"timezone": "UTC"})
        check(now.is_error is False and "UTC" in text_of(now), f"now through the alias: {now}")
        denied = await client.call_tool("everything_get-env", {})
        check(kind_of(denied) == "denied" and "credentials" in text_of(denied), f"get-env: {denied}")
        big = await client.call_tool("everything_echo", {"message": "x" * 30_000})
        check(big.is_error is False and "read_tool_result" in text_of(big), f"a large echo: {text_of(big)[:300]}")
        result_id = ((big.meta or {}).get("toolgate") or {}).get("result_id")
        check(isinstance(result_id, str), f"no result_id in _meta.toolgate: {big.meta}")
        page = await client.call_tool("read_tool_result", {"id": result_id, "offset": 0, "limit": 20000})
        check(page.is_error is False and text_of(page).startswith("Echo: xxxx"), f"read back: {text_of(page)[:300]}")


async def an_upstream_tool_list_change_reaches_the_client(opts: argparse.Namespace) -> None:
    """An upstream server that adds a tool and says so (notifications/tools/list_changed): serve
    rebuilds its engine with the new list and tells its own clients."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(
            "version: 1\nmcp_servers:\n  - name: fake\n    command: "
            + json.dumps([sys.executable, str(FAKE_UPSTREAM)])
            + "\n"
        )
        changed = asyncio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with serving(opts, policy) as server, server.client(message_handler=on_message) as client:
            before = [t.name for t in (await client.list_tools()).tools]
            check("fake.echo" in before and "fake.late" not in before, f"before: {before}")
            added = await client.call_tool("fake.add_tool", {"name": "late"})
            check(added.is_error is False, f"add_tool: {added}")
            await asyncio.wait_for(changed.wait(), 20)
            after = [t.name for t in (await client.list_tools()).tools]
            check("fake.late" in after, f"after the upstream's list_changed: {after}")
            late = await client.call_tool("fake.late", {"text": "hi"})
            check(late.is_error is False, f"the new tool: {late}")


async def upstream_progress_reaches_the_client(opts: argparse.Namespace) -> None:
    """Progress an upstream server sends for a call goes on to serve's own client."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(
            "version: 1\nmcp_servers:\n  - name: fake\n    command: "
            + json.dumps([sys.executable, str(FAKE_UPSTREAM)])
            + "\n"
        )
        seen: list[str | None] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(message)

        async with serving(opts, policy) as server, server.client() as client:
            result = await client.call_tool("fake.progress", {"steps": 3}, progress_callback=on_progress)
        check(result.is_error is False and text_of(result) == "done", f"progress call: {result}")
        # The upstream's last notice can race its answer (two streams into toolgate); one that
        # arrives after the answer is moot and dropped. The first ones must come through.
        check(len(seen) >= 1 and all(m and "step" in m for m in seen), f"progress seen: {seen}")


async def pinning_again_offers_a_held_back_tool(opts: argparse.Namespace) -> None:
    """A pinned upstream tool whose description changed is held back from serve's clients;
    `toolgate upstream pin` while serve runs rewrites the pins file, which serve watches: the
    tool comes back, and clients are told their list changed."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        defs = folder / "defs.json"
        defs.write_text(json.dumps({"add_description": "Adds two numbers."}))
        policy = folder / "policy.yaml"
        policy.write_text(
            "version: 1\nmcp_servers:\n  - name: calc\n    pins: policy.pins.json\n    cwd: .\n    command: "
            + json.dumps([sys.executable, str(PINNABLE_UPSTREAM), "defs.json"])
            + "\n"
        )

        def pin() -> None:
            done = subprocess.run([opts.toolgate, "upstream", "pin", str(policy)], capture_output=True, text=True)
            check(done.returncode == 0, f"upstream pin failed: {done.stdout}{done.stderr}")

        pin()
        defs.write_text(json.dumps({"add_description": "Adds two numbers, and keeps a copy."}))
        changed = asyncio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with serving(opts, policy) as server, server.client(message_handler=on_message) as client:
            before = [t.name for t in (await client.list_tools()).tools]
            check("calc.multiply" in before and "calc.add" not in before, f"before pinning again: {before}")
            held = await client.call_tool("calc.add", {"a": 2, "b": 3})
            check(kind_of(held) == "unknown_tool", f"the held-back tool answered: {held}")
            check('"add" is held back' in server.log_text() and "description changed" in server.log_text(),
                  f"no warning naming the change:\n{server.log_text()}")
            pin()
            await asyncio.wait_for(changed.wait(), 20)
            after = await client.call_tool("calc.add", {"a": 2, "b": 3})
            check(after.is_error is False and text_of(after) == "5", f"after pinning again: {after}")


SCENARIOS = {f.__name__: f for f in [
    list_matches_cli, call_returns_the_tool_text, failures_are_error_results, images_are_image_content,
    progress_becomes_notifications, cancellation_reaches_the_tool, search_makes_tools_visible_and_says_so,
    sessions_are_isolated, reload_applies_a_valid_edit, reload_keeps_the_last_good_policy, reload_on_sighup,
    in_flight_calls_finish_on_the_old_policy, bad_input_gets_json_rpc_errors, foreign_origins_are_refused,
    a_token_is_required_when_configured, sessions_are_bounded, two_instances_share_a_session,
    upstream_tools_are_served_under_the_policy, an_upstream_tool_list_change_reaches_the_client,
    upstream_progress_reaches_the_client, pinning_again_offers_a_held_back_tool,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 120))
    print("ok")


if __name__ == "__main__":
    main()
