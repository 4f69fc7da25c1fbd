"""Limits and per-principal settings of `toolgate serve --http` for a team (issue 27, items 2 and
3), driven by the official MCP Python SDK and raw HTTP, with API keys made by `toolgate key new`:
the per-principal HTTP request limit (`limits.requests`: 429 with Retry-After, kept locally or in
a real redis-server), rates and concurrency per principal, overrides that apply to some
principals only, and tool_search by principal.

    python tests/mcp/team_limits.py --toolgate target/debug/toolgate SCENARIO

Each scenario checks one behaviour and exits 0 when it holds (the Rust tests in
tests/tests/team_http_limits.rs run one each). The Redis scenario uses the server of
`scripts/redis.sh start` (TOOLGATE_TEST_REDIS_URL) or starts one of its own from Debian's
`redis-server` (TOOLGATE_TEST_REDIS_SERVER, else the one on PATH).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import httpx2
from mcp import MCPError

from serve_clients import INITIALIZE, check, kind_of, raw_post, text_of
from team_auth import call_as, client, new_key, policy_text, serving

# The JSON-RPC code of a request refused by limits.requests (mcp/src/serve/http_limits.rs).
RATE_LIMITED = -32029


def keys(opts: argparse.Namespace, *principals: str) -> tuple[dict[str, str], str]:
    """A key per principal, and the `auth:` lines that accept them."""
    made = {p: new_key(opts.toolgate, p) for p in principals}
    auth = "  api_keys:\n" + "\n".join(f"  {entry}" for _, entry in made.values())
    return {p: key for p, (key, _) in made.items()}, auth


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def meta(result: Any) -> dict[str, Any]:
    return (result.meta or {}).get("toolgate") or {}


# ---- limits.requests: HTTP 429 (L8) ------------------------------------------------------

REQUESTS = """limits:
  requests:
    - principals: [alice]
      rate: 3/m
telemetry: {metrics: true}
"""


async def l8_a_principal_over_its_request_limit_gets_429_with_retry_after_and_the_reason(
    opts: argparse.Namespace,
) -> None:
    key, auth = keys(opts, "alice", "bob")
    async with serving(opts, policy_text(auth, REQUESTS)) as (server, _):
        assert server.url
        for i in range(3):
            passed = raw_post(server.url, INITIALIZE, bearer(key["alice"]))
            check(passed.status_code == 200, f"alice's request {i + 1} of a burst of 3: HTTP {passed.status_code}")
        refused = raw_post(server.url, INITIALIZE, bearer(key["alice"]))
        check(refused.status_code == 429, f"alice's 4th request: HTTP {refused.status_code} {refused.text}")
        # 3/m: one request every 20 s once the burst is used up.
        retry = int(refused.headers.get("retry-after", "0"))
        check(15 <= retry <= 20, f"Retry-After: {refused.headers.get('retry-after')!r}")
        check(refused.headers.get("content-type") == "application/json", f"{refused.headers}")
        body = refused.json()
        print("429 body:", json.dumps(body), file=sys.stderr)
        error = body["error"]
        check(body["jsonrpc"] == "2.0" and error["code"] == RATE_LIMITED, f"{body}")
        check(
            error["message"].startswith("rate limited: at most 3 requests by alice per 1m (burst 3; limits.requests[0]); retry after "),
            f"{error['message']}",
        )
        data = error["data"]
        check(data["error"] == "rate_limited" and data["principal"] == "alice", f"{data}")
        check(data["limit"] == "3/1m" and data["burst"] == 3 and data["policy"] == "limits.requests[0]", f"{data}")
        check(re.search(r"policy\.yaml:\d+:\d+$", data["at"] or "") is not None, f"where in the policy: {data}")
        check(15_000 <= data["retry_after_ms"] <= 20_000, f"{data}")
        # bob is not named by the entry: never limited.
        for _ in range(6):
            other = raw_post(server.url, INITIALIZE, bearer(key["bob"]))
            check(other.status_code == 200, f"bob: HTTP {other.status_code}")
        # The refusal is counted with the calls a rate limit refused.
        metrics = httpx2.get(server.url.replace("/mcp", "/metrics"), headers=bearer(key["bob"]), timeout=10)
        check(metrics.status_code == 200, f"/metrics: HTTP {metrics.status_code}")
        line = re.search(r'toolgate_rate_limit_rejections_total\{kind="http_request",tool=""\} (\d+)', metrics.text)
        check(line is not None and line.group(1) == "1", f"the rejections metric: {line and line.group(0)}")


async def l8_the_python_sdk_reads_a_429_as_the_error_of_its_request_with_the_reason(
    opts: argparse.Namespace,
) -> None:
    key, auth = keys(opts, "alice", "bob")
    limits = "limits:\n  requests:\n    - principals: [alice]\n      rate: 5/h\n"
    async with serving(opts, policy_text(auth, limits)) as (server, _):
        http, mcp = client(server, key["alice"])
        passed, error = 0, None
        async with http, mcp:
            for i in range(10):
                try:
                    result = await mcp.call_tool("echo", {"text": f"call {i}"})
                except MCPError as e:
                    error = e
                    break
                check(text_of(result) == f"call {i}", f"{result}")
                passed += 1
        check(error is not None, f"no call of alice was refused in 10 (passed {passed})")
        assert error is not None
        print(f"after {passed} calls the SDK raised MCPError({error.code}, {error.message!r}, {error.data})", file=sys.stderr)
        check(passed >= 1, "alice's first call was refused")
        check(error.code == RATE_LIMITED, f"code {error.code}")
        check("rate limited: at most 5 requests by alice per 1h" in error.message and "retry after" in error.message, error.message)
        check(error.data["principal"] == "alice" and error.data["retry_after_ms"] > 0, f"{error.data}")
        result = await call_as(server, key["bob"], "echo", {"text": "bob"})
        check(text_of(result) == "bob", f"bob: {result}")


async def l8_a_principal_at_429_does_not_slow_another(opts: argparse.Namespace) -> None:
    key, auth = keys(opts, "alice", "bob")
    limits = "limits:\n  requests:\n    - principals: [alice]\n      rate: 1/h\n"
    async with serving(opts, policy_text(auth, limits)) as (server, _):
        assert server.url
        url = server.url
        http, mcp = client(server, key["bob"])
        async with http, mcp:

            async def bob_calls(n: int) -> list[float]:
                took = []
                for i in range(n):
                    started = time.perf_counter()
                    result = await mcp.call_tool("echo", {"text": f"bob {i}"})
                    took.append(time.perf_counter() - started)
                    check(result.is_error is False and text_of(result) == f"bob {i}", f"bob's call {i}: {result}")
                return took

            quiet = await bob_calls(20)
            statuses: dict[int, int] = {}
            stop = threading.Event()
            lock = threading.Lock()

            def flood() -> None:
                try:
                    with httpx2.Client(timeout=10) as raw:
                        while not stop.is_set():
                            answer = raw.post(url, content=INITIALIZE, headers={
                                "content-type": "application/json",
                                "accept": "application/json, text/event-stream", **bearer(key["alice"])})
                            with lock:
                                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
                except Exception as e:  # noqa: BLE001 - reported by the check below
                    with lock:
                        statuses[-1] = statuses.get(-1, 0) + 1
                    print(f"alice's flood stopped: {e!r}", file=sys.stderr)

            def refused_so_far() -> int:
                with lock:
                    return statuses.get(429, 0)

            threads = [threading.Thread(target=flood, daemon=True) for _ in range(4)]
            for t in threads:
                t.start()
            try:
                # The flood is under way before bob's calls are timed...
                deadline = time.monotonic() + 30
                while refused_so_far() < 20:
                    check(time.monotonic() < deadline and -1 not in statuses, f"alice's flood: {statuses}")
                    await asyncio.sleep(0.01)
                before = refused_so_far()
                flooded = await bob_calls(50)
                # ...and goes on while they run.
                during = refused_so_far() - before
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=20)
        refused = statuses.get(429, 0)
        print(
            f"bob's echo over HTTP: p50 {statistics.median(quiet) * 1000:.1f} ms alone, "
            f"p50 {statistics.median(flooded) * 1000:.1f} ms / max {max(flooded) * 1000:.1f} ms "
            f"while alice got {statuses} ({during} answers 429 during bob's 50 calls)",
            file=sys.stderr,
        )
        check(statuses.get(200, 0) <= 1 and -1 not in statuses, f"alice's flood: {statuses}")
        check(during >= 10, f"alice got only {during} answers 429 during bob's calls")
        # Every one of bob's calls went through; none waited on alice's refusals.
        check(max(flooded) < 5.0, f"bob's slowest call took {max(flooded):.2f} s")


@contextlib.contextmanager
def redis_url() -> Iterator[str]:
    """The shared test server of scripts/redis.sh, or a redis-server of this scenario's own."""
    shared = os.environ.get("TOOLGATE_TEST_REDIS_URL")
    if shared:
        yield shared
        return
    program = os.environ.get("TOOLGATE_TEST_REDIS_SERVER") or shutil.which("redis-server")
    check(program is not None, "redis-server is not installed: run `bash scripts/redis.sh install` (scripts/test.sh does)")
    assert program
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as data:
        process = subprocess.Popen(
            [program, "--port", str(port), "--bind", "127.0.0.1", "--dir", data, "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                        conn.sendall(b"PING\r\n")
                        if conn.recv(16).startswith(b"+PONG"):
                            break
                except OSError:
                    pass
                check(process.poll() is None and time.monotonic() < deadline, "redis-server did not come up")
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/"
        finally:
            process.terminate()
            process.wait(timeout=10)


async def l8_request_limits_in_redis_are_shared_by_two_servers(opts: argparse.Namespace) -> None:
    key, auth = keys(opts, "alice")
    with redis_url() as url:
        # A prefix of this run's own: the shared server keeps other tests' keys.
        limits = f"""limits:
  requests:
    - rate: 2/h
  redis:
    url: "{url}"
    prefix: "toolgate-test:{uuid.uuid4().hex}"
    on_store_error: closed
"""
        text = policy_text(auth, limits)
        async with serving(opts, text) as (first, _), serving(opts, text) as (second, _):
            assert first.url and second.url
            answers = [raw_post(server.url or "", INITIALIZE, bearer(key["alice"])).status_code
                       for server in (first, second, first, second)]
            check(answers == [200, 200, 429, 429], f"alice's requests to one server, the other, ...: {answers}")
            refused = raw_post(second.url, INITIALIZE, bearer(key["alice"]))
            # 2/h: the next request passes 30 minutes after the first two.
            check(1790 <= int(refused.headers["retry-after"]) <= 1800, f"Retry-After {refused.headers['retry-after']}")


# ---- per-principal limits of calls over HTTP (L1, L2, L3) ---------------------------------

async def l2_a_rate_for_one_principal_limits_its_calls_alone_with_retry_after(opts: argparse.Namespace) -> None:
    key, auth = keys(opts, "alice", "bob")
    limits = """limits:
  rates:
    - principals: [alice]
      tools: ["ech*"]
      rate: 2/h
"""
    async with serving(opts, policy_text(auth, limits)) as (server, folder):
        http, mcp = client(server, key["alice"])
        async with http, mcp:
            results = [await mcp.call_tool("echo", {"text": f"a{i}"}) for i in range(3)]
        check([text_of(r) for r in results[:2]] == ["a0", "a1"], f"{results[:2]}")
        limited = results[2]
        check(limited.is_error is True and kind_of(limited) == "rate_limited", f"{limited}")
        text = text_of(limited)
        check(
            text.startswith("Error: rate limited: at most 2 calls by alice to echo per 1h (burst 2; limits.rates[0]); retry after ")
            and text.endswith(" s"),
            f"the model reads {text!r}",
        )
        after = meta(limited).get("retry_after_ms", 0)
        check(1_790_000 <= after <= 1_800_000, f"retry_after_ms {after}")
        http, mcp = client(server, key["bob"])
        async with http, mcp:
            for i in range(5):
                result = await mcp.call_tool("echo", {"text": f"b{i}"})
                check(result.is_error is False and text_of(result) == f"b{i}", f"bob's call {i}: {result}")


async def in_flight(server: Any, credential: str) -> int:
    """toolgate_calls_in_flight of tool calls, read at /metrics."""
    assert server.url
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.get(server.url.replace("/mcp", "/metrics"), headers=bearer(credential))
    found = re.search(r'toolgate_calls_in_flight\{kind="tool"\} (\d+)', answer.text)
    return int(found.group(1)) if found else 0


async def l3_one_principal_s_slow_calls_do_not_stop_another_s_over_http(opts: argparse.Namespace) -> None:
    key, auth = keys(opts, "alice", "bob")
    limits = """limits:
  concurrency:
    per_principal: 1
    total: 2
telemetry: {metrics: true}
"""
    async with serving(opts, policy_text(auth, limits)) as (server, _):
        http, mcp = client(server, key["alice"])
        async with http, mcp:
            started = time.perf_counter()
            slow = [asyncio.create_task(mcp.call_tool("sleep", {"ms": 2000})) for _ in range(4)]
            # Alice's first call runs (and her others wait for her one place).
            deadline = time.monotonic() + 20
            while await in_flight(server, key["bob"]) < 1:
                check(time.monotonic() < deadline, "alice's calls did not start")
                await asyncio.sleep(0.02)
            bob_started = time.perf_counter()
            result = await call_as(server, key["bob"], "echo", {"text": "bob"})
            bob_took = time.perf_counter() - bob_started
            alice = await asyncio.gather(*slow)
            alice_took = time.perf_counter() - started
        print(f"bob's echo: {bob_took * 1000:.0f} ms while alice's 4 calls of 2 s took {alice_took:.1f} s", file=sys.stderr)
        check(text_of(result) == "bob", f"bob: {result}")
        check(bob_took < 1.5, f"bob waited {bob_took:.2f} s behind alice's calls")
        check(all(r.is_error is False for r in alice), f"alice: {alice}")
        # Her calls ran one at a time: per_principal 1.
        check(alice_took >= 7.5, f"alice's 4 calls of 2 s took {alice_took:.1f} s: not one at a time")


# ---- overrides for some principals (C8) --------------------------------------------------

async def c8_an_override_for_a_principal_applies_to_its_calls_only(opts: argparse.Namespace) -> None:
    key, auth = keys(opts, "alice", "bob")
    tools = """tools:
  sleep:
    principals: [alice]
    timeout: 100ms
"""
    async with serving(opts, policy_text(auth, tools)) as (server, _):
        cut = await call_as(server, key["alice"], "sleep", {"ms": 1000})
        check(cut.is_error is True and kind_of(cut) == "timeout", f"alice's sleep of 1 s under 100ms: {cut}")
        check("100ms" in text_of(cut), text_of(cut))
        ran = await call_as(server, key["bob"], "sleep", {"ms": 300})
        check(ran.is_error is False, f"bob's sleep of 300 ms under the default 30s: {ran}")


# ---- tool_search by principal (C4) -------------------------------------------------------

SEARCH = """search: {}
clients:
  - principals: [alice]
    tools: [echo, big_output]
  - principals: [bob]
    tools: [echo]
"""


async def found_by(server: Any, credential: str, query: str) -> tuple[list[str], list[str], Any]:
    """What `query` finds for the holder of `credential`, what it lists then, and its call of
    big_output, all in one session."""
    http, mcp = client(server, credential)
    async with http, mcp:
        answer = await mcp.call_tool("tool_search", {"query": query})
        check(answer.is_error is False, f"tool_search: {answer}")
        found = sorted(t["name"] for t in json.loads(text_of(answer))["tools"])
        listed = sorted(t.name for t in (await mcp.list_tools()).tools)
        called = await mcp.call_tool("big_output", {"bytes": 3})
    return found, listed, called


async def c4_two_principals_searching_one_catalog_find_only_their_tools(opts: argparse.Namespace) -> None:
    key, auth = keys(opts, "alice", "bob")
    text = policy_text(auth, SEARCH).replace("  - name: testkit\n", "  - name: testkit\n    searchable: true\n")
    async with serving(opts, text) as (server, _):
        for query in ["select:echo,big_output", "big output echo"]:
            found, listed, called = await found_by(server, key["alice"], query)
            check(found == ["big_output", "echo"], f"alice's {query!r} found {found}")
            check({"big_output", "echo"} <= set(listed), f"alice lists {listed}")
            check(called.is_error is False and len(text_of(called)) == 3, f"alice's big_output: {called}")
            found, listed, called = await found_by(server, key["bob"], query)
            check(found == ["echo"], f"bob's {query!r} found {found}")
            check("big_output" not in listed and "echo" in listed, f"bob lists {listed}")
            check(kind_of(called) == "denied" and "not available to bob" in text_of(called), f"bob's big_output: {called}")


SCENARIOS = {f.__name__: f for f in [
    l8_a_principal_over_its_request_limit_gets_429_with_retry_after_and_the_reason,
    l8_the_python_sdk_reads_a_429_as_the_error_of_its_request_with_the_reason,
    l8_a_principal_at_429_does_not_slow_another,
    l8_request_limits_in_redis_are_shared_by_two_servers,
    l2_a_rate_for_one_principal_limits_its_calls_alone_with_retry_after,
    l3_one_principal_s_slow_calls_do_not_stop_another_s_over_http,
    c8_an_override_for_a_principal_applies_to_its_calls_only,
    c4_two_principals_searching_one_catalog_find_only_their_tools,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    opts.transport = "http"
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 150))
    print("ok")


if __name__ == "__main__":
    os.environ.setdefault("RUST_LOG", "info")
    main()
