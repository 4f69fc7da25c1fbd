"""`toolgate serve` under abuse (issue 25, items 17 to 21), driven by the official MCP Python SDK
where the behaviour concerns clients, and by raw sockets and raw HTTP where the point is a client
that misbehaves (one that never finishes its request, abandons its session, or reads nothing).

Everything talks to 127.0.0.1 only, with a bounded number of connections, and each scenario is
bounded in time (120 s, see serve_clients.main). The Rust tests in tests/tests/serve_abuse.rs run
one scenario each:

    python tests/mcp/serve_abuse.py --toolgate target/debug/toolgate --transport http half_open_flood
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import mcp_types as types
from mcp import MCPError

from serve_clients import INITIALIZE, RELOAD_BASE, TESTKIT, Server, check, kind_of, raw_post, serving, text_of, wait_for


def limited_files(n: int):
    """A `preexec_fn` that lets the child open at most `n` files."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def start_http(server: Server, nofile: int | None = None) -> None:
    """Like Server.start_http, optionally with a file descriptor limit."""
    if nofile is None:
        server.start_http()
        return
    log = open(server.log, "wb")
    server.process = subprocess.Popen(
        [server.toolgate, *server.args(), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=server.env,
        preexec_fn=limited_files(nofile),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # Whole lines only (`splitlines` would also give the one serve is still writing, and
        # with it a cut URL).
        for line in server.log_text().splitlines(keepends=True):
            if "listening on http://" in line and line.endswith("\n"):
                server.url = line.split("listening on ", 1)[1].strip()
                return
        check(server.process.poll() is None, f"serve exited early:\n{server.log_text()}")
        time.sleep(0.02)
    raise AssertionError("serve did not say where it listens within 60 s")


def session_headers(session: str) -> dict[str, str]:
    return {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}


def abandoned_session(url: str) -> str:
    """Opens a session the way a client does, and leaves it without closing it."""
    answer = raw_post(url, INITIALIZE)
    check(answer.status_code == 200, f"initialize: HTTP {answer.status_code} {answer.text}")
    session = answer.headers["mcp-session-id"]
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    done = raw_post(url, note, session_headers(session))
    check(done.status_code in (200, 202), f"initialized: HTTP {done.status_code}")
    return session


def tools_list(url: str, session: str) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
    return raw_post(url, body, session_headers(session)).status_code


# --- 17: slow clients -------------------------------------------------------------------------


async def half_open_flood(opts: argparse.Namespace) -> None:
    """500 connections that never finish their request head, against a serve that may open 200
    files: the slow ones are disconnected after --read-timeout, accepting pauses (logged once a
    burst) instead of spinning while files run out, and a real client is served."""
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(opts.toolgate, "http", TESTKIT, Path(tmp), ["--read-timeout", "1s"])
        server.env["RUST_LOG"] = "warn"
        start_http(server, nofile=200)
        try:
            assert server.url
            host, port = server.url.removeprefix("http://").split("/")[0].split(":")
            flood = []
            for _ in range(500):
                try:
                    s = socket.create_connection((host, int(port)), timeout=2)
                except TimeoutError:
                    break  # the listen backlog is full: the server is not accepting
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                flood.append(s)
            check(len(flood) > 200, f"only {len(flood)} connections could be opened")

            async def log_stays_small() -> None:
                while True:
                    size = server.log.stat().st_size
                    check(size < 1_000_000, f"the log grew to {size} bytes during the flood")
                    await asyncio.sleep(0.05)

            watchdog = asyncio.create_task(log_stays_small())
            try:
                async def served() -> types.ListToolsResult:
                    async with server.client() as client:
                        return await client.list_tools()

                try:
                    tools = await asyncio.wait_for(served(), 60)
                except TimeoutError:
                    raise AssertionError(
                        f"a client was not served within 60 s of the flood; log:\n{server.log_text()[-2000:]}"
                    ) from None
            finally:
                watchdog.cancel()
            check(any(t.name == "echo" for t in tools.tools), f"tools: {tools}")
            # Every slow connection was closed by the server.
            deadline = time.monotonic() + 30
            for s in flood:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    got = s.recv(1024)
                except ConnectionResetError:
                    got = b""
                except TimeoutError:
                    raise AssertionError("a half-sent request was still open 30 s after the client was served") from None
                check(b" 200 " not in got, f"a half-sent request was answered: {got!r}")
            refused = server.log_text().count("cannot accept a connection")
            check(refused <= 20, f"{refused} accept failures logged:\n{server.log_text()[:4000]}")
            for s in flood:
                s.close()
        finally:
            code = server.stop()
            check(code == 0, f"serve ended with {code}:\n{server.log_text()[:4000]}")


async def a_request_head_sent_too_slowly_is_cut_off(opts: argparse.Namespace) -> None:
    """A connection that starts a request and never finishes its head is closed by the server."""
    async with serving(opts, TESTKIT, ["--read-timeout", "1s"]) as server:
        assert server.url
        host, port = server.url.removeprefix("http://").split("/")[0].split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            try:
                got = s.recv(1024)
            except TimeoutError:
                raise AssertionError("the half-sent request was still open after 30 s") from None
            check(b"200" not in got, f"answered: {got!r}")


# --- 18: sessions -----------------------------------------------------------------------------


async def restored_sessions_count_against_max_sessions(opts: argparse.Namespace) -> None:
    """Three sessions abandoned on one serve; the next serve on the same store, with
    --max-sessions 2, brings back two of them and refuses the third (503)."""
    with tempfile.TemporaryDirectory() as tmp:
        first = Server(opts.toolgate, "http", TESTKIT, Path(tmp), [])
        first.start_http()
        assert first.url
        sessions = [abandoned_session(first.url) for _ in range(3)]
        check(first.stop() == 0, "the first serve did not stop cleanly")
        second = Server(opts.toolgate, "http", TESTKIT, Path(tmp), ["--max-sessions", "2"])
        second.start_http()
        try:
            assert second.url
            statuses = [tools_list(second.url, s) for s in sessions]
            check(statuses == [200, 200, 503], f"the old sessions got {statuses}")
            fresh = raw_post(second.url, INITIALIZE)
            check(fresh.status_code == 503, f"a new session past the limit got {fresh.status_code}")
        finally:
            second.stop()


async def an_abandoned_session_is_closed_after_the_idle_timeout(opts: argparse.Namespace) -> None:
    async with serving(opts, TESTKIT, ["--max-sessions", "1", "--idle-timeout", "1s"]) as server:
        assert server.url
        abandoned_session(server.url)
        check(raw_post(server.url, INITIALIZE).status_code == 503, "the limit of one session did not hold")
        deadline = time.monotonic() + 30
        while raw_post(server.url, INITIALIZE).status_code != 200:
            check(time.monotonic() < deadline, "the abandoned session still held its place after 30 s")
            await asyncio.sleep(0.1)


async def results_prune_deletes_abandoned_mcp_sessions(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(RELOAD_BASE + "reduction: {}\nsessions: {ttl: 0s}\n")
        server = Server(opts.toolgate, "http", policy, Path(tmp), [])
        server.start_http()
        assert server.url
        abandoned_session(server.url)
        check(server.stop() == 0, "serve did not stop cleanly")
        records = Path(server.env["TOOLGATE_RESULTS_DIR"]) / "mcp-sessions"
        check(any(p.is_file() for p in records.rglob("*")), "the session was not kept in the store")
        pruned = subprocess.run(
            [opts.toolgate, "results", "prune", "--policy", str(policy), "--older-than", "7d", "--json"],
            env=server.env, capture_output=True, text=True, timeout=60,
        )
        check(pruned.returncode == 0, f"prune: {pruned.returncode} {pruned.stderr}")
        left = [p for p in records.rglob("*") if p.is_file()]
        check(left == [], f"left after prune: {left}")
        check(json.loads(pruned.stdout)["expired_sessions"] >= 1, f"prune said {pruned.stdout}")


# --- 19: progress -----------------------------------------------------------------------------


async def a_timeout_is_not_held_up_by_progress(opts: argparse.Namespace) -> None:
    """A tool that reports progress millions of times is stopped at the policy's 1 s timeout,
    and the client has the timeout soon after, not after every notification was sent."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(RELOAD_BASE.replace("timeout: 30s", "timeout: 1s"))
        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        async with serving(opts, policy) as server, server.client() as client:
            started = time.monotonic()
            result = await client.call_tool("progress", {"steps": 3_000_000}, progress_callback=on_progress,
                                            read_timeout_seconds=60)
            took = time.monotonic() - started
        print(f"the timeout reached the client {took:.2f} s after the call began", file=sys.stderr)
        check(kind_of(result) == "timeout", f"the call: {result}")
        check(took < 10, f"the timeout reached the client {took:.1f} s after the call began")
        check(seen == sorted(seen), f"progress went backwards: {seen[:20]}")


def rss_and_cpu(pid: int) -> tuple[int, int]:
    """The process's resident memory in bytes and its CPU time in clock ticks."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return rss, int(fields[11]) + int(fields[12])


async def a_client_that_reads_no_progress_costs_no_memory(opts: argparse.Namespace) -> None:
    """A client asks for progress of a tool that reports 2 million times and never reads its
    response: serve's memory stays flat while the tool runs (the updates wait as one)."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(RELOAD_BASE.replace("timeout: 30s", "timeout: 60s"))
        async with serving(opts, policy) as server:
            assert server.url
            session = abandoned_session(server.url)
            pid = server.pid()
            base, _ = rss_and_cpu(pid)
            host, port = server.url.removeprefix("http://").split("/")[0].split(":")
            call = json.dumps({
                "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "progress", "arguments": {"steps": 2_000_000}, "_meta": {"progressToken": "p"}},
            }).encode()
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n"
                f"Mcp-Protocol-Version: 2025-06-18\r\nContent-Length: {len(call)}\r\n\r\n"
            ).encode()
            # A small receive buffer, never read: the server's writes back up at once.
            reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.connect((host, int(port)))
            reader.sendall(head + call)
            # Watch while the tool runs: until serve has been idle for a second, or 60 s.
            peak, idle_since, last_cpu = base, None, rss_and_cpu(pid)[1]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                rss, cpu = rss_and_cpu(pid)
                peak = max(peak, rss)
                check(peak - base < 64 << 20, f"serve grew by {(peak - base) >> 20} MiB")
                if cpu - last_cpu <= 1:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > 1:
                        break
                else:
                    idle_since = None
                last_cpu = cpu
            reader.close()
            print(f"grew by {(peak - base) >> 20} MiB at most", file=sys.stderr)


# --- 20: stdio --------------------------------------------------------------------------------


async def a_request_over_the_limit_gets_an_error(opts: argparse.Namespace) -> None:
    """Over stdio, a 17 MB request (over the 4 MiB default and rmcp's own 16 MiB) is answered
    with a JSON-RPC error, and the connection goes on."""
    async with serving(opts, TESTKIT) as server, server.client() as client:
        try:
            await client.call_tool("echo", {"text": "x" * (17 << 20)}, read_timeout_seconds=30)
            raise AssertionError("a 17 MB request was served")
        except MCPError as e:
            check(e.error.code == -32600 and "larger" in e.error.message, f"the error: {e.error}")
        result = await client.call_tool("echo", {"text": "still here"})
        check(text_of(result) == "still here", f"after the big request: {result}")


# --- 21: reload through symbolic links --------------------------------------------------------


async def reload_follows_a_swapped_symlink(opts: argparse.Namespace) -> None:
    """The Kubernetes ConfigMap layout: policy.yaml -> ..data/policy.yaml, ..data -> a revision
    folder; an update makes a new folder and swaps the ..data link."""
    with tempfile.TemporaryDirectory() as tmp:
        mount = Path(tmp) / "config"
        first = mount / "..2026_01_01_00_00_00.1"
        first.mkdir(parents=True)
        (first / "policy.yaml").write_text(RELOAD_BASE)
        os.symlink(first.name, mount / "..data")
        os.symlink("..data/policy.yaml", mount / "policy.yaml")
        async with serving(opts, mount / "policy.yaml") as server, server.client() as client:
            check((await client.call_tool("echo", {"text": "a"})).is_error is False, "echo before the update")
            second = mount / "..2026_01_01_00_01_00.2"
            second.mkdir()
            (second / "policy.yaml").write_text(
                RELOAD_BASE + "rules:\n  deny:\n    - tools: [echo]\n      reason: echo is off\n")
            os.symlink(second.name, mount / "..data_tmp")
            os.rename(mount / "..data_tmp", mount / "..data")
            subprocess.run(["rm", "-rf", str(first)], check=True)
            await wait_for(lambda: "policy reloaded" in server.log_text(), "a reload after the ..data swap", 20)
            denied = await client.call_tool("echo", {"text": "a"})
            check(kind_of(denied) == "denied", f"after the swap: {denied}")
            # And again: the watch moved to the new revision.
            third = mount / "..2026_01_01_00_02_00.3"
            third.mkdir()
            (third / "policy.yaml").write_text(RELOAD_BASE)
            os.symlink(third.name, mount / "..data_tmp")
            os.rename(mount / "..data_tmp", mount / "..data")
            await wait_for(lambda: server.log_text().count("policy reloaded") >= 2, "a second reload", 20)
            allowed = await client.call_tool("echo", {"text": "b"})
            check(text_of(allowed) == "b", f"after the second swap: {allowed}")


SCENARIOS = {f.__name__: f for f in [
    half_open_flood, a_request_head_sent_too_slowly_is_cut_off, restored_sessions_count_against_max_sessions,
    an_abandoned_session_is_closed_after_the_idle_timeout, results_prune_deletes_abandoned_mcp_sessions,
    a_timeout_is_not_held_up_by_progress, a_client_that_reads_no_progress_costs_no_memory,
    a_request_over_the_limit_gets_an_error, reload_follows_a_swapped_symlink,
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
