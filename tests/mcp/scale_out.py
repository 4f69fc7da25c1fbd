"""Two `toolgate serve --http` instances behind a plain round-robin (issue 27, item 7), driven by
the official MCP Python SDK and raw HTTP, on real servers: moto's S3 (scripts/s3-server.sh) for
results, sessions and the audit prefix, and Debian's redis-server (scripts/redis.sh) for limits.

    python tests/mcp/scale_out.py --toolgate target/debug/toolgate SCENARIO

Each scenario checks one behaviour and prints `ok` when it holds (the Rust tests in
tests/tests/scale_out.rs run one each and say where the servers come from). Lines starting with
`figure:` are measurements the Rust test passes on.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import boto3
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from serve_clients import INITIALIZE, Server, check, kind_of, raw_post, text_of

# Two API keys (their SHA-256 goes in the policy): two principals.
ALICE = "tgk_" + "a1" * 32
BOB = "tgk_" + "b0" * 32
FOUND = ["echo", "stubborn_sleep", "big_output"]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def env(name: str) -> str:
    value = os.environ.get(name)
    check(value is not None, f"{name} is unset: the Rust test passes the servers' settings")
    assert value is not None
    return value


def s3_options() -> str:
    return f"""    endpoint: "{env('TOOLGATE_TEST_S3_ENDPOINT')}"
    region: "{env('TOOLGATE_TEST_S3_REGION')}"
    access_key_id: "{env('TOOLGATE_TEST_S3_ACCESS_KEY_ID')}"
    secret_access_key: "{env('TOOLGATE_TEST_S3_SECRET_ACCESS_KEY')}"
    allow_http: "true"
"""


class Cluster:
    """A policy for two or more instances: results, sessions and audit under one fresh S3
    prefix, limits in Redis under one fresh key prefix."""

    def __init__(self, folder: Path, rate: str = "100/h", redis_url: str | None = None,
                 on_store_error: str = "open", batch_lines: int = 1000):
        self.folder = folder
        self.bucket = env("TOOLGATE_TEST_S3_BUCKET")
        self.prefix = f"scale-out-{time.time_ns()}"
        redis_url = redis_url or env("TOOLGATE_TEST_REDIS_URL")
        self.policy = folder / "policy.yaml"
        self.policy.write_text(f"""version: 1
dispatch: {{timeout: 60s}}
plugins:
  - name: testkit
    searchable: true
search:
  allow_direct_calls: false
auth:
  api_keys:
    - {{principal: alice, sha256: {sha256(ALICE)}}}
    - {{principal: bob, sha256: {sha256(BOB)}}}
reduction:
  store: s3://{self.bucket}/{self.prefix}/results
  store_options:
{s3_options()}  max_result_bytes: 1000
sessions: {{ttl: 1h}}
limits:
  rates:
    - tools: [echo]
      per: principal
      rate: {rate}
  redis:
    url: "{redis_url}"
    prefix: "{self.prefix}"
    timeout: 200ms
    on_store_error: {on_store_error}
audit:
  sink: object_store
  store: s3://{self.bucket}/{self.prefix}/audit
  store_options:
{s3_options()}  batch_lines: {batch_lines}
  batch_interval: 1h
""")
        self.servers: list[Server] = []

    @property
    def spool(self) -> Path:
        """The default spool: audit-spool beside the policy, shared by the instances here."""
        return self.folder / "audit-spool"

    def start(self, opts: argparse.Namespace) -> Server:
        server = Server(opts.toolgate, "http", self.policy, self.folder, [])
        server.start_http()
        self.servers.append(server)
        return server

    def stop_all(self) -> None:
        for server in self.servers:
            if server.process is not None and server.process.poll() is None:
                server.stop()

    def audit_objects(self) -> list[str]:
        s3 = boto3.client(
            "s3", endpoint_url=env("TOOLGATE_TEST_S3_ENDPOINT"), region_name=env("TOOLGATE_TEST_S3_REGION"),
            aws_access_key_id=env("TOOLGATE_TEST_S3_ACCESS_KEY_ID"),
            aws_secret_access_key=env("TOOLGATE_TEST_S3_SECRET_ACCESS_KEY"))
        keys: list[str] = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=f"{self.prefix}/audit/"):
            keys += [o["Key"] for o in page.get("Contents", [])]
        return sorted(keys)

    def audit_lines(self) -> list[dict[str, Any]]:
        s3 = boto3.client(
            "s3", endpoint_url=env("TOOLGATE_TEST_S3_ENDPOINT"), region_name=env("TOOLGATE_TEST_S3_REGION"),
            aws_access_key_id=env("TOOLGATE_TEST_S3_ACCESS_KEY_ID"),
            aws_secret_access_key=env("TOOLGATE_TEST_S3_SECRET_ACCESS_KEY"))
        lines = []
        for key in self.audit_objects():
            body = s3.get_object(Bucket=self.bucket, Key=key)["Body"].read().decode()
            lines += [json.loads(line) for line in body.splitlines()]
        return lines


@contextlib.asynccontextmanager
async def cluster(opts: argparse.Namespace, count: int = 2, **policy: Any) -> AsyncIterator[tuple[Cluster, list[Server]]]:
    with tempfile.TemporaryDirectory() as tmp:
        group = Cluster(Path(tmp), **policy)
        try:
            servers = [group.start(opts) for _ in range(count)]
            yield group, servers
        finally:
            group.stop_all()


class RoundRobin(httpx2.AsyncBaseTransport):
    """A plain load balancer: each request goes to the instance `target` names (the test moves
    it); an instance that refuses a connection is taken out, and the request goes to the next
    one, as a balancer whose health check saw it go."""

    def __init__(self, servers: list[Server]) -> None:
        self.ports = [httpx2.URL(s.url or "").port for s in servers]
        self.target = 0
        self.down: set[int] = set()
        self.inner = httpx2.AsyncHTTPTransport()

    def next(self) -> None:
        for _ in self.ports:
            self.target = (self.target + 1) % len(self.ports)
            if self.target not in self.down:
                return

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        while True:
            chosen = self.target
            request.url = request.url.copy_with(port=self.ports[chosen])
            try:
                return await self.inner.handle_async_request(request)
            except httpx2.ConnectError:
                self.down.add(chosen)
                if len(self.down) == len(self.ports):
                    raise
                if self.target == chosen:
                    self.next()

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def balanced(servers: list[Server], credential: str = ALICE) -> AsyncIterator[tuple[RoundRobin, Client]]:
    """One MCP client (one session) of `credential`'s principal behind a round-robin."""
    balancer = RoundRobin(servers)
    http = httpx2.AsyncClient(transport=balancer, timeout=30, headers={"authorization": f"Bearer {credential}"})
    assert servers[0].url
    async with http, Client(streamable_http_client(servers[0].url, http_client=http), mode="legacy") as client:
        yield balancer, client


class Calls:
    """The calls a client made and what each answered: the oracle of the audit log."""

    def __init__(self) -> None:
        self.made: list[tuple[str, str, str, str | None]] = []

    async def call(self, client: Client, tool: str, args: dict[str, Any], principal: str = "alice") -> types.CallToolResult:
        result = await client.call_tool(tool, args)
        outcome = "error" if result.is_error else "ok"
        self.made.append((principal, tool, outcome, kind_of(result)))
        return result

    def expected(self) -> collections.Counter[tuple[str, str, str, str | None]]:
        return collections.Counter(self.made)


def audited(lines: list[dict[str, Any]]) -> collections.Counter[tuple[str, str, str, str | None]]:
    return collections.Counter(
        (line["principal"], line["tool"], line["outcome"], line["error_kind"]) for line in lines if "tool" in line)


async def find(calls: Calls, client: Client) -> None:
    found = await calls.call(client, "tool_search", {"query": "select:" + ",".join(FOUND)})
    check(found.is_error is False, f"tool_search: {text_of(found)}")


# ---- sessions, results and owners --------------------------------------------------------

async def a_session_opened_on_one_instance_keeps_its_found_tools_on_the_other(opts: argparse.Namespace) -> None:
    async with cluster(opts) as (_, servers), balanced(servers) as (balancer, client):
        await find(Calls(), client)
        balancer.next()
        started = time.monotonic()
        listed = [t.name for t in (await client.list_tools()).tools]
        picked_up = time.monotonic() - started
        for name in FOUND:
            check(name in listed, f"{name} is not listed on the second instance: {listed}")
        started = time.monotonic()
        again = [t.name for t in (await client.list_tools()).tools]
        warm = time.monotonic() - started
        check(again == listed, f"{again} != {listed}")
        echoed = await client.call_tool("echo", {"text": "across"})
        check(echoed.is_error is False and text_of(echoed) == "across", f"echo on the second instance: {echoed}")
        print(f"figure: first request of the session on the other instance (restored from S3) "
              f"{picked_up * 1000:.1f} ms, the next one {warm * 1000:.1f} ms")


async def a_result_offloaded_on_one_instance_is_read_back_on_the_other(opts: argparse.Namespace) -> None:
    async with cluster(opts) as (_, servers), balanced(servers) as (balancer, client):
        await find(Calls(), client)
        big = await client.call_tool("big_output", {"bytes": 5000})
        result_id = ((big.meta or {}).get("toolgate") or {}).get("result_id")
        check(isinstance(result_id, str), f"no result_id in _meta.toolgate: {big.meta} {text_of(big)[:300]}")
        balancer.next()
        page = await client.call_tool("read_tool_result", {"id": result_id, "offset": 0, "limit": 5000})
        check(page.is_error is False, f"read_tool_result on the second instance: {text_of(page)[:300]}")
        check(len(text_of(page)) >= 4000, f"read back {len(text_of(page))} characters: {text_of(page)[:300]}")


def session_call(url: str, session: str, credential: str) -> httpx2.Response:
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}).encode()
    return raw_post(url, call, {"authorization": f"Bearer {credential}", "mcp-session-id": session,
                                "mcp-protocol-version": "2025-06-18"})


async def another_principal_presenting_a_session_id_is_refused_on_every_instance(opts: argparse.Namespace) -> None:
    async with cluster(opts) as (_, servers):
        a, b = servers
        assert a.url and b.url
        opened = raw_post(a.url, INITIALIZE, {"authorization": f"Bearer {ALICE}"})
        check(opened.status_code == 200, f"alice's initialize on A: {opened.status_code} {opened.text}")
        session = opened.headers["mcp-session-id"]
        # Bob goes to the instance that did not open it, before alice does: B knows the owner
        # from the store only.
        stolen = session_call(b.url, session, BOB)
        check(stolen.status_code == 403, f"bob in alice's session on B: HTTP {stolen.status_code} {stolen.text}")
        check("another principal" in stolen.json()["error"]["message"], stolen.text)
        own = session_call(b.url, session, ALICE)
        check(own.status_code == 200, f"alice in her session on B: HTTP {own.status_code} {own.text}")
        still = session_call(a.url, session, BOB)
        check(still.status_code == 403, f"bob in alice's session on A: HTTP {still.status_code}")


# ---- limits ------------------------------------------------------------------------------

async def a_rate_limit_counts_the_calls_of_both_instances_together(opts: argparse.Namespace) -> None:
    async with cluster(opts, rate="3/h") as (_, servers), balanced(servers) as (balancer, client):
        await find(Calls(), client)
        for i in range(3):
            answer = await client.call_tool("echo", {"text": f"call {i}"})
            check(answer.is_error is False, f"call {i} on instance {balancer.target}: {text_of(answer)}")
            balancer.next()
        limited = await client.call_tool("echo", {"text": "one too many"})
        check(kind_of(limited) == "rate_limited", f"the fourth call on instance {balancer.target}: {text_of(limited)}")
        check("retry after" in text_of(limited), text_of(limited))
        # Another principal has a count of its own, on either instance.
        async with balanced(servers, BOB) as (_, other):
            await find(Calls(), other)
            passed = await other.call_tool("echo", {"text": "bob"})
            check(passed.is_error is False, f"bob's first call: {text_of(passed)}")


class OwnRedis:
    """A redis-server of the scenario's own (TOOLGATE_TEST_REDIS_SERVER), to kill mid-run."""

    def __init__(self, folder: Path) -> None:
        self.program = env("TOOLGATE_TEST_REDIS_SERVER")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.folder = folder
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout
        for line in self.process.stdout:
            if "Ready to accept connections" in line:
                return
        raise AssertionError(f"{self.program} stopped before it was ready")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def own_redis() -> Iterator[OwnRedis]:
    with tempfile.TemporaryDirectory() as tmp:
        redis = OwnRedis(Path(tmp))
        redis.start()
        try:
            yield redis
        finally:
            redis.kill()


async def redis_down(opts: argparse.Namespace, on_store_error: str) -> list[types.CallToolResult]:
    """One call on each instance with Redis up, then Redis killed, then one call on each."""
    with own_redis() as redis:
        async with cluster(opts, redis_url=redis.url, on_store_error=on_store_error) as (_, servers), \
                balanced(servers) as (balancer, client):
            await find(Calls(), client)
            for instance in range(2):
                balancer.target = instance
                up = await client.call_tool("echo", {"text": "redis up"})
                check(up.is_error is False, f"with Redis up, on instance {instance}: {text_of(up)}")
            redis.kill()
            answers = []
            for instance in range(2):
                balancer.target = instance
                started = time.monotonic()
                answers.append(await client.call_tool("echo", {"text": "redis down"}))
                print(f"figure: a call with Redis down ({on_store_error}) on instance {instance} answered in "
                      f"{(time.monotonic() - started) * 1000:.0f} ms (limits.redis.timeout 200ms)")
            if on_store_error == "closed":
                # Redis back on the same port: both instances use it again, without a restart.
                redis.start()
                for instance in range(2):
                    balancer.target = instance
                    back = await client.call_tool("echo", {"text": "redis back"})
                    check(back.is_error is False, f"with Redis back, on instance {instance}: {text_of(back)}")
            return answers


async def with_redis_down_an_open_policy_lets_calls_through_on_both_instances(opts: argparse.Namespace) -> None:
    for instance, answer in enumerate(await redis_down(opts, "open")):
        check(answer.is_error is False and text_of(answer) == "redis down",
              f"instance {instance}, on_store_error open: {text_of(answer)}")


async def with_redis_down_a_closed_policy_refuses_calls_on_both_instances(opts: argparse.Namespace) -> None:
    for instance, answer in enumerate(await redis_down(opts, "closed")):
        check(kind_of(answer) == "limits_unavailable", f"instance {instance}, closed: {text_of(answer)} {answer.meta}")
        retry = ((answer.meta or {}).get("toolgate") or {}).get("retry_after_ms")
        check(isinstance(retry, int) and retry >= 1000, f"retry_after_ms {retry}")
        check("retry after" in text_of(answer), text_of(answer))


# ---- audit -------------------------------------------------------------------------------

async def the_audit_prefix_holds_one_line_per_call_of_both_instances(opts: argparse.Namespace) -> None:
    async with cluster(opts, rate="4/h") as (group, servers):
        calls = Calls()
        async with balanced(servers) as (balancer, client):
            await find(calls, client)
            for i in range(6):
                balancer.next()
                await calls.call(client, "echo", {"text": f"call {i}"})
            await calls.call(client, "big_output", {"bytes": 10})
        check(calls.made.count(("alice", "echo", "error", "rate_limited")) == 2, f"{calls.made}")
        group.stop_all()
        lines = group.audit_lines()
        check(audited(lines) == calls.expected(), f"audit {audited(lines)} != calls {calls.expected()}")
        writers = {key.rsplit("/", 1)[-1].split("-")[1] for key in group.audit_objects()}
        check(len(writers) == 2, f"objects of {len(writers)} writers: {group.audit_objects()}")
        print(f"figure: audit lines written {len(calls.made)} calls, read back {len(lines)} lines "
              f"in {len(group.audit_objects())} objects of {len(writers)} instances")


async def a_graceful_stop_writes_every_buffered_line_and_empties_the_spool(opts: argparse.Namespace) -> None:
    async with cluster(opts) as (group, servers):
        calls = Calls()
        async with balanced(servers) as (balancer, client):
            await find(calls, client)
            for i in range(4):
                balancer.next()
                await calls.call(client, "echo", {"text": f"call {i}"})
        # Nothing fills a batch and the interval is an hour: the lines wait, in memory and in
        # the spool.
        check(group.audit_objects() == [], f"written before the stop: {group.audit_objects()}")
        spooled = sum(len(p.read_text().splitlines()) for p in group.spool.glob("*.jsonl"))
        check(spooled == len(calls.made), f"{spooled} lines in the spool, {len(calls.made)} calls")
        for server in servers:
            code = server.stop()
            check(code == 0, f"serve exited {code} on SIGTERM:\n{server.log_text()[-2000:]}")
        lines = group.audit_lines()
        check(audited(lines) == calls.expected(), f"audit {audited(lines)} != calls {calls.expected()}")
        left = sorted(p.name for p in group.spool.iterdir())
        check(left == [], f"the spool after a graceful stop: {left}")


# ---- an instance killed --------------------------------------------------------------------

@contextlib.contextmanager
def tool_gate() -> Iterator[socket.socket]:
    """A listener `stubborn_sleep {until_closed}` connects to: the connection says the call
    runs, closing it ends the call."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        # A call that never connects fails the scenario instead of holding it.
        listener.settimeout(30)
        yield listener


async def a_client_whose_instance_is_killed_mid_call_retries_on_the_other_and_keeps_its_session(opts: argparse.Namespace) -> None:
    async with cluster(opts) as (_, servers), balanced(servers) as (balancer, client):
        a, _b = servers
        await find(Calls(), client)
        big = await client.call_tool("big_output", {"bytes": 5000})
        result_id = ((big.meta or {}).get("toolgate") or {}).get("result_id")
        check(isinstance(result_id, str), f"no result_id: {big.meta}")
        with tool_gate() as gate:
            address = "%s:%d" % gate.getsockname()
            args = {"ms": 60_000, "until_closed": address}
            in_flight = asyncio.ensure_future(client.call_tool("stubborn_sleep", args))
            # The tool connects: the call runs on A. A is killed before the connection closes.
            held, _ = await asyncio.get_running_loop().run_in_executor(None, gate.accept)
            killed = time.monotonic()
            assert a.process
            a.process.send_signal(signal.SIGKILL)
            a.process.wait()
            held.close()
            # The client gives up on the call after its own timeout: the SDK (mcp 2.3.0) keeps
            # resuming the broken stream on the other instance, which answers each resume with
            # an empty stream (rmcp 3.11), so no error comes back by itself
            # (docs/rmcp-upstream.md).
            try:
                lost = await asyncio.wait_for(in_flight, 5)
                check(lost.is_error is True, f"the call on the killed instance answered: {lost}")
            except Exception as e:  # noqa: BLE001 - the SDK reports a broken stream as an exception
                print(f"the in-flight call failed as the instance died: {type(e).__name__}: {e}")
            # The client retries the same call; the balancer sends it to the instance that lives.
            retried = asyncio.ensure_future(client.call_tool("stubborn_sleep", args))
            conn, _ = await asyncio.get_running_loop().run_in_executor(None, gate.accept)
            conn.close()
            answer = await asyncio.wait_for(retried, 30)
            print(f"figure: from the kill to the retried call's answer on the other instance "
                  f"{(time.monotonic() - killed) * 1000:.0f} ms")
        check(answer.is_error is False, f"the retried call: {text_of(answer)}")
        listed = [t.name for t in (await client.list_tools()).tools]
        for name in FOUND:
            check(name in listed, f"{name} is not listed after the retry: {listed}")
        page = await client.call_tool("read_tool_result", {"id": result_id, "offset": 0, "limit": 5000})
        check(page.is_error is False and len(text_of(page)) >= 4000, f"the earlier result: {text_of(page)[:300]}")


async def the_audit_lines_of_a_killed_instance_are_shipped_by_the_next_start(opts: argparse.Namespace) -> None:
    async with cluster(opts) as (group, servers):
        a, b = servers
        calls = Calls()
        async with balanced(servers) as (balancer, client):
            await find(calls, client)
            for i in range(3):
                await calls.call(client, "echo", {"text": f"on A {i}"})
            balancer.target = 1
            for i in range(2):
                await calls.call(client, "echo", {"text": f"on B {i}"})
        assert a.process
        a.process.send_signal(signal.SIGKILL)
        a.process.wait()
        # A's lines were answered but not in a batch yet: only its spool has them.
        check(group.audit_objects() == [], f"written before the kill: {group.audit_objects()}")
        restarted = group.start(opts)
        for server in (b, restarted):
            code = server.stop()
            check(code == 0, f"serve exited {code} on SIGTERM:\n{server.log_text()[-2000:]}")
        lines = group.audit_lines()
        check(audited(lines) == calls.expected(), f"audit {audited(lines)} != calls {calls.expected()}")
        check("adopting the lines of a writer that is gone" in restarted.log_text(), restarted.log_text()[-3000:])
        left = sorted(p.name for p in group.spool.iterdir())
        check(left == [], f"the spool after the restart and a graceful stop: {left}")
        print(f"figure: {len(calls.made)} calls answered ({len(calls.made) - 2} on the killed instance), "
              f"{len(lines)} audit lines read back")


SCENARIOS = {f.__name__: f for f in [
    a_session_opened_on_one_instance_keeps_its_found_tools_on_the_other,
    a_result_offloaded_on_one_instance_is_read_back_on_the_other,
    another_principal_presenting_a_session_id_is_refused_on_every_instance,
    a_rate_limit_counts_the_calls_of_both_instances_together,
    with_redis_down_an_open_policy_lets_calls_through_on_both_instances,
    with_redis_down_a_closed_policy_refuses_calls_on_both_instances,
    the_audit_prefix_holds_one_line_per_call_of_both_instances,
    a_graceful_stop_writes_every_buffered_line_and_empties_the_spool,
    a_client_whose_instance_is_killed_mid_call_retries_on_the_other_and_keeps_its_session,
    the_audit_lines_of_a_killed_instance_are_shipped_by_the_next_start,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 180))
    print("ok")


if __name__ == "__main__":
    main()
