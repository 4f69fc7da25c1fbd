"""`toolgate serve` seen by what watches it (issue 28): a real OTLP receiver decoding spans with the
official protobuf definitions (tests/mcp/otlp_receiver.py), a real upstream MCP server on the
official Python SDK that takes part in the trace (tests/mcp/traced_server.py), an agent on the
official Python client whose spans start the trace, a real Prometheus (scripts/prometheus.sh) and
the JSON log lines.

Each scenario checks one behaviour and exits 0 when it holds; a failed check raises with a message
that says what was expected and what came back. tests/tests/telemetry.rs runs one scenario each:

    python tests/mcp/telemetry.py --toolgate target/debug/toolgate trace_goes_on
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
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from otlp_receiver import GrpcReceiver, Point, Receiver, Span  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO / "tests" / "mcp" / "traced_server.py"

# A trace the client names by the HTTP `traceparent` header alone.
HEADER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
HEADER_PARENT = "00f067aa0ba902b7"


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def policy_text(workdir: Path, receiver: Receiver | None, telemetry: str) -> str:
    record = workdir / "traceparents.txt"
    env = f"TRACED_SERVER_RECORD: {json.dumps(str(record))}"
    if receiver is not None:
        env += f", OTEL_EXPORTER_OTLP_ENDPOINT: {json.dumps(receiver.endpoint)}"
    return f"""version: 1
dispatch:
  timeout: 20s
mcp_servers:
  - name: up
    command: [{json.dumps(sys.executable)}, {json.dumps(str(UPSTREAM))}]
    env: {{{env}}}
rules:
  deny:
    - tools: [up.echo]
      args: {{text: "forbidden*"}}
      reason: nothing forbidden
telemetry:
{telemetry}
"""


class Serve:
    """One `toolgate serve` with its own policy, log and results folder."""

    def __init__(self, toolgate: str, workdir: Path, policy: str, extra: list[str], env: dict[str, str]):
        self.toolgate = toolgate
        self.policy = workdir / "policy.yaml"
        self.policy.write_text(policy)
        self.log = workdir / "serve.log"
        self.extra = extra
        self.env = {**os.environ, "TOOLGATE_RESULTS_DIR": str(workdir / "results"), **env}
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def args(self) -> list[str]:
        return ["serve", "--policy", str(self.policy), *self.extra]

    def start_http(self) -> None:
        self.process = subprocess.Popen(
            [self.toolgate, *self.args(), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "wb"),
            env=self.env,
        )
        self.url = self.wait_for_line(r"listening on (http://\S+)\r?\n")

    def wait_for_line(self, pattern: str) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log_text())
            if found:
                return found.group(1)
            if self.process is not None:
                check(self.process.poll() is None, f"serve exited early:\n{self.log_text()}")
            time.sleep(0.02)
        raise AssertionError(f"serve did not log {pattern!r} within 60 s:\n{self.log_text()}")

    def http_client(self, headers: dict[str, str] | None = None) -> Client:
        assert self.url is not None
        http = httpx2.AsyncClient(headers=headers or {}, timeout=30)
        return Client(streamable_http_client(self.url, http_client=http), mode="legacy")

    def stdio_client(self) -> Client:
        params = StdioServerParameters(command=self.toolgate, args=self.args(), env=self.env)
        return Client(stdio_client(params, errlog=open(self.log, "a")), mode="legacy")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("serve did not stop within 30 s of SIGTERM")
        check(code == 0, f"serve ended with exit code {code} on SIGTERM:\n{self.log_text()}")


@contextlib.contextmanager
def serving(
    opts: argparse.Namespace, receiver: Receiver | None, telemetry: str, extra: list[str] | None = None,
    env: dict[str, str] | None = None, http: bool = True,
) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        serve = Serve(opts.toolgate, workdir, policy_text(workdir, receiver, telemetry), extra or [], env or {})
        serve.record = workdir / "traceparents.txt"  # type: ignore[attr-defined]
        if http:
            serve.start_http()
        try:
            yield serve
        finally:
            serve.stop()


def agent_tracer(receiver: Receiver) -> trace.Tracer:
    """The agent's own spans (service `agent`), sent to the receiver as each ends; the MCP
    client puts the current span's context into each request's `_meta` (SEP-414)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces")))
    trace.set_tracer_provider(provider)
    return trace.get_tracer("toolgate-telemetry-test")


def wait_for_spans(receiver: Receiver, want: Callable[[list[Span]], bool], what: str, seconds: float = 30) -> list[Span]:
    deadline = time.monotonic() + seconds
    while True:
        spans = receiver.spans()
        if want(spans):
            return spans
        if time.monotonic() > deadline:
            listing = "\n".join(f"  {s.service} {s.kind} {s.name!r} {s.trace_id}/{s.span_id} <- {s.parent_span_id}" for s in spans)
            raise AssertionError(f"timed out waiting for {what}; spans received:\n{listing}")
        time.sleep(0.05)


def one(spans: list[Span], what: str, **match: Any) -> Span:
    found = [s for s in spans if all(getattr(s, k) == v for k, v in match.items())]
    check(len(found) == 1, f"want one {what} ({match}), found {len(found)}: {found}")
    return found[0]


TRACES = """  traces: true
  otlp_endpoint: {endpoint}
  service_name: toolgate"""


# ---------------------------------------------------------------------------------------------
# scenarios


async def call_span_attributes(opts: argparse.Namespace) -> None:
    """O1: a call's span carries the GenAI attributes, the decision and the rule; a refused
    call's span has an error status and its error kind."""
    receiver = Receiver.start()
    tracer = agent_tracer(receiver)
    with serving(opts, receiver, TRACES.format(endpoint=receiver.endpoint), env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as serve:
        async with serve.http_client() as client:
            with tracer.start_as_current_span("allowed") as allowed:
                ok = await client.call_tool("up.echo", {"text": "hi"})
            with tracer.start_as_current_span("refused") as refused:
                denied = await client.call_tool("up.echo", {"text": "forbidden thing"})
        check(text_of(ok) == "hi", f"echo said {text_of(ok)!r}")
        check(denied.is_error is True, f"the forbidden call was not refused: {denied}")
        allowed_trace = format(allowed.get_span_context().trace_id, "032x")
        refused_trace = format(refused.get_span_context().trace_id, "032x")

        def calls(spans: list[Span]) -> list[Span]:
            return [s for s in spans if s.service == "toolgate" and s.name == "execute_tool up.echo"]

        spans = wait_for_spans(receiver, lambda s: len(calls(s)) >= 2, "two execute_tool spans from toolgate")
    call = one(calls(spans), "allowed call span", trace_id=allowed_trace)
    attrs = call.attributes
    check(attrs.get("gen_ai.operation.name") == "execute_tool", f"operation: {attrs}")
    check(attrs.get("gen_ai.tool.name") == "up.echo", f"tool name: {attrs}")
    check(bool(attrs.get("gen_ai.tool.call.id")), f"no call id: {attrs}")
    check(attrs.get("mcp.method.name") == "tools/call", f"method: {attrs}")
    check(attrs.get("toolgate.decision") == "allow", f"decision: {attrs}")
    check(attrs.get("toolgate.result.chars") == 2, f"result size: {attrs}")
    check(attrs.get("toolgate.offloaded") is False, f"offloaded: {attrs}")
    check(bool(attrs.get("toolgate.session")), f"no session: {attrs}")
    check(attrs.get("toolgate.principal") == "local", f"principal (no token: the local one): {attrs}")
    check(call.status != 2, f"an allowed call has an error status: {call}")

    bad = one(calls(spans), "refused call span", trace_id=refused_trace)
    attrs = bad.attributes
    check(attrs.get("toolgate.decision") == "deny", f"decision: {attrs}")
    check("deny[0]" in str(attrs.get("toolgate.rule")), f"rule: {attrs}")
    check(attrs.get("error.type") == "denied", f"error kind: {attrs}")
    check(bad.status == 2, f"a refused call's span has status {bad.status}, want 2 (error)")
    # The rules did work: a child span for them.
    one(spans, "rules stage span", name="guard.rules", parent_span_id=bad.span_id)
    # Nothing reached the upstream server for the refused call.
    check(
        not [s for s in spans if s.trace_id == refused_trace and s.service == "upstream"],
        "the refused call reached the upstream server",
    )
    receiver.stop()


async def trace_goes_on(opts: argparse.Namespace) -> None:
    """O2, O3: the agent's trace goes on through toolgate into the upstream server, parent after
    parent: agent client span -> toolgate server span -> execute_tool -> toolgate client span ->
    upstream server span; the upstream server received toolgate's client span as its
    `_meta.traceparent`."""
    receiver = Receiver.start()
    tracer = agent_tracer(receiver)
    with serving(opts, receiver, TRACES.format(endpoint=receiver.endpoint), env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as serve:
        async with serve.http_client() as client:
            with tracer.start_as_current_span("agent turn") as root:
                result = await client.call_tool("up.echo", {"text": "traced"})
        check(text_of(result) == "traced", f"echo said {text_of(result)!r}")
        trace_id = format(root.get_span_context().trace_id, "032x")

        def chain_done(spans: list[Span]) -> bool:
            mine = [s for s in spans if s.trace_id == trace_id]
            return {("toolgate", "client"), ("upstream", "server")} <= {(s.service, s.kind) for s in mine}

        spans = wait_for_spans(receiver, chain_done, "toolgate's and the upstream server's spans in the agent's trace")
        mine = [s for s in spans if s.trace_id == trace_id]
        # The agent's client may list the tools first, in the same trace: the call's span.
        agent_send = one(mine, "agent client span", service="agent", kind="client", name="MCP send tools/call up.echo")
        gateway = one(mine, "toolgate server span", service="toolgate", kind="server")
        check(gateway.name == "tools/call up.echo", f"server span name {gateway.name!r}")
        check(gateway.parent_span_id == agent_send.span_id, f"toolgate's server span's parent is {gateway.parent_span_id}, not the agent's {agent_send.span_id}")
        call = one(mine, "execute_tool span", service="toolgate", name="execute_tool up.echo")
        check(call.parent_span_id == gateway.span_id, "execute_tool is not a child of the server span")
        out = one(mine, "toolgate client span", service="toolgate", kind="client")
        check(out.name == "tools/call echo", f"client span name {out.name!r}")
        check(out.parent_span_id == call.span_id, "the upstream request is not a child of execute_tool")
        upstream = one(mine, "upstream server span", service="upstream", kind="server")
        check(upstream.parent_span_id == out.span_id, f"the upstream server span's parent is {upstream.parent_span_id}, not toolgate's client span {out.span_id}")
        received = serve.record.read_text().split()  # type: ignore[attr-defined]
        check(received == [f"00-{trace_id}-{out.span_id}-01"], f"the upstream server received traceparent {received}")

    receiver.stop()


async def trace_from_header(opts: argparse.Namespace) -> None:
    """O3: a request whose only trace context is its HTTP `traceparent` header (this agent has
    no tracer, so the MCP client puts none in `_meta`) continues that trace."""
    receiver = Receiver.start()
    with serving(opts, receiver, TRACES.format(endpoint=receiver.endpoint), env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as serve:
        header = {"traceparent": f"00-{HEADER_TRACE}-{HEADER_PARENT}-01"}
        async with serve.http_client(headers=header) as client:
            result = await client.call_tool("up.echo", {"text": "by header"})
        check(text_of(result) == "by header", f"echo said {text_of(result)!r}")
        spans = wait_for_spans(
            receiver,
            # Each process exports on its own schedule: wait for toolgate's server span too,
            # not only for the upstream's.
            lambda s: any(x.trace_id == HEADER_TRACE and x.service == "upstream" for x in s)
            and any(x.trace_id == HEADER_TRACE and x.service == "toolgate" and x.kind == "server" for x in s),
            "the header's trace to reach toolgate's server span and the upstream server",
        )
    in_header_trace = [s for s in spans if s.trace_id == HEADER_TRACE and s.service == "toolgate"]
    gateway = one(in_header_trace, "toolgate server span in the header's trace", kind="server", name="tools/call up.echo")
    check(gateway.parent_span_id == HEADER_PARENT, f"parent {gateway.parent_span_id}, want {HEADER_PARENT}")
    receiver.stop()


async def json_logs(opts: argparse.Namespace) -> None:
    """O6: `--log-format json` writes one JSON object a line; a line logged inside a call names
    the call's trace and span."""
    receiver = Receiver.start()
    tracer = agent_tracer(receiver)
    env = {"OTEL_BSP_SCHEDULE_DELAY": "100", "RUST_LOG": "warn,toolgate=debug"}
    with serving(opts, receiver, TRACES.format(endpoint=receiver.endpoint), extra=["--log-format", "json"], env=env) as serve:
        async with serve.http_client() as client:
            with tracer.start_as_current_span("refused") as root:
                await client.call_tool("up.echo", {"text": "forbidden"})
        trace_id = format(root.get_span_context().trace_id, "032x")
        spans = wait_for_spans(
            receiver,
            lambda s: any(x.trace_id == trace_id and x.name == "execute_tool up.echo" for x in s),
            "the refused call's span",
        )
        call = one(spans, "the refused call's span", trace_id=trace_id, name="execute_tool up.echo")
        lines = [line for line in serve.log_text().splitlines() if line.strip()]
    objects = []
    for line in lines:
        if line.startswith("toolgate serve:"):
            continue  # the address line a supervisor reads, not a log line
        try:
            objects.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise AssertionError(f"a log line is not JSON ({e}): {line!r}")
    check(all({"timestamp", "level", "target"} <= set(o) for o in objects), f"a line lacks a key: {objects}")
    failed = [o for o in objects if "tool call failed" in o.get("message", "")]
    check(len(failed) == 1, f"want one 'tool call failed' line, got {failed}")
    check(failed[0].get("trace_id") == trace_id, f"line trace_id {failed[0].get('trace_id')}, want {trace_id}")
    check(failed[0].get("span_id") == call.span_id, f"line span_id {failed[0].get('span_id')}, want {call.span_id}")
    check(failed[0].get("fields", {}).get("kind") == "denied", f"fields: {failed[0]}")
    receiver.stop()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        check(answer.status == 200, f"GET {url}: {answer.status}")
        check("text" in answer.headers.get("Content-Type", ""), f"content type {answer.headers.get('Content-Type')}")
        return answer.read().decode()


def metric_lines(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{") or line.startswith(name + " ")]


async def prometheus_scrapes_calls(opts: argparse.Namespace) -> None:
    """O5: a real Prometheus scrapes toolgate's /metrics and a PromQL query returns the calls
    made, by outcome."""
    prometheus = os.environ.get("TOOLGATE_TEST_PROMETHEUS_URL")
    targets = os.environ.get("TOOLGATE_TEST_PROMETHEUS_TARGETS")
    check(
        bool(prometheus and targets),
        'no Prometheus: start one with eval "$(bash scripts/prometheus.sh start)" (scripts/test.sh does)',
    )
    assert prometheus is not None and targets is not None
    job = f"toolgate-{os.getpid()}-{time.monotonic_ns()}"
    with serving(opts, None, "  metrics: true") as serve:
        async with serve.http_client() as client:
            for text in ["a", "b", "c"]:
                await client.call_tool("up.echo", {"text": text})
            await client.call_tool("up.echo", {"text": "forbidden"})
        assert serve.url is not None
        base = serve.url.rsplit("/", 1)[0]
        direct = scrape(base + "/metrics")
        check(
            'toolgate_upstream_up{server="up",state="up"} 1' in direct,
            f"no upstream state in /metrics:\n{direct}",
        )
        target = Path(targets) / f"{job}.json"
        target.write_text(json.dumps([{"targets": [base.split("//", 1)[1]], "labels": {"job": job}}]))
        try:
            query = f'sum by (outcome) (toolgate_calls_total{{job="{job}"}})'
            deadline = time.monotonic() + 60
            seen: dict[str, float] = {}
            while time.monotonic() < deadline:
                url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": query})
                with urllib.request.urlopen(url, timeout=10) as answer:
                    body = json.load(answer)
                check(body.get("status") == "success", f"query failed: {body}")
                seen = {r["metric"].get("outcome", ""): float(r["value"][1]) for r in body["data"]["result"]}
                if seen == {"ok": 3.0, "denied": 1.0}:
                    break
                time.sleep(0.5)
            check(seen == {"ok": 3.0, "denied": 1.0}, f"Prometheus says {seen} for {query}, want ok 3 and denied 1")
        finally:
            target.unlink(missing_ok=True)


async def admin_address_over_stdio(opts: argparse.Namespace) -> None:
    """O5: serving stdio, the metrics are read at telemetry.admin_address."""
    telemetry = "  admin_address: 127.0.0.1:0"
    with serving(opts, None, telemetry, http=False) as serve:
        async with serve.stdio_client() as client:
            result = await client.call_tool("up.echo", {"text": "over stdio"})
            check(text_of(result) == "over stdio", f"echo said {text_of(result)!r}")
            url = serve.wait_for_line(r"metrics on (http://\S+)\r?\n")
            text = scrape(url)
    want = 'toolgate_calls_total{kind="tool",tool="up.echo",outcome="ok"} 1'
    check(want in text, f"{want!r} not in the metrics:\n{text}")
    check(metric_lines(text, "toolgate_calls_in_flight") == ['toolgate_calls_in_flight{kind="tool"} 0'],
          f"in flight: {metric_lines(text, 'toolgate_calls_in_flight')}")


# ---------------------------------------------------------------------------------------------
# metrics over OTLP (O7) and gRPC (O8)


def latest(points: list[Point], name: str) -> list[Point]:
    """The points of `name` in the last export that carried it (cumulative values: the last
    export holds the totals)."""
    mine = [p for p in points if p.name == name]
    if not mine:
        return []
    last = max(p.export for p in mine)
    return [p for p in mine if p.export == last]


def value_of(points: list[Point], name: str, **attributes: Any) -> float | None:
    """The value (a histogram's count) of the series of `name` with exactly `attributes`, in
    the last export that carried `name`; None when there is no such series."""
    found = [p for p in latest(points, name) if p.attributes == attributes]
    check(len(found) <= 1, f"{name} {attributes}: {len(found)} series in one export")
    return found[0].value if found else None


def wait_for_points(receiver: Any, want: Callable[[list[Point]], bool], what: str, seconds: float = 30) -> list[Point]:
    deadline = time.monotonic() + seconds
    while True:
        points = receiver.points()
        if want(points):
            return points
        if time.monotonic() > deadline:
            last = {p.name: [] for p in points}
            for p in points:
                last[p.name] = [q for q in latest(points, p.name)]
            listing = "\n".join(f"  {q.name} {q.kind} {q.attributes} = {q.value}" for qs in last.values() for q in qs)
            raise AssertionError(f"timed out waiting for {what}; last points received:\n{listing}")
        time.sleep(0.05)


TOOL = {"kind": "tool", "tool": "up.echo"}


async def five_calls(client: Client) -> None:
    """3 allowed calls of up.echo, 1 the rules refuse, 1 of a tool no one has."""
    for text in ["a", "b", "c"]:
        result = await client.call_tool("up.echo", {"text": text})
        check(text_of(result) == text, f"echo said {text_of(result)!r}")
    denied = await client.call_tool("up.echo", {"text": "forbidden"})
    check(denied.is_error is True, f"the forbidden call was not refused: {denied}")
    unknown = await client.call_tool("no_such_tool", {})
    check(unknown.is_error is True, f"an unknown tool answered: {unknown}")


def check_five_calls(points: list[Point], serving: bool = True) -> None:
    """What five_calls must have left in the exported metrics; `serving`: exported while serve
    ran (in the last export, at stop, the upstream server is already going down)."""
    calls = {
        (p.attributes.get("tool"), p.attributes.get("outcome")): p.value
        for p in latest(points, "toolgate.calls")
    }
    check(calls == {("up.echo", "ok"): 3, ("up.echo", "denied"): 1, ("unknown", "error"): 1},
          f"toolgate.calls by tool and outcome: {calls}")
    sums = latest(points, "toolgate.calls")
    check(all(p.kind == "sum" and p.monotonic and p.temporality == 2 for p in sums),
          f"toolgate.calls is not a cumulative monotonic sum: {sums}")
    check(value_of(points, "toolgate.call.denials", **TOOL, by="rule") == 1, "denials by rule")
    check(value_of(points, "toolgate.call.errors", **TOOL, error_kind="denied") == 1, "errors of kind denied")
    check(value_of(points, "toolgate.call.errors", kind="tool", tool="unknown", error_kind="unknown_tool") == 1,
          "errors of kind unknown_tool")
    durations = [p for p in latest(points, "toolgate.call.duration") if p.attributes == TOOL]
    check(len(durations) == 1 and durations[0].value == 4 and durations[0].kind == "histogram",
          f"toolgate.call.duration of up.echo: want one histogram of 4 calls, got {durations}")
    hist = durations[0]
    check(hist.unit == "s" and len(hist.bounds) == 16 and abs(hist.bounds[0] - 0.0005) < 1e-12,
          f"latency buckets: unit {hist.unit!r}, bounds {hist.bounds}")
    check(sum(hist.counts) == 4 and hist.total > 0, f"bucket counts {hist.counts}, sum {hist.total}")
    check(value_of(points, "toolgate.calls.in_flight", kind="tool") == 0, "calls in flight after the calls")
    if serving:
        check(value_of(points, "toolgate.upstream.up", server="up", state="up") == 1,
              f"the upstream server's state: {latest(points, 'toolgate.upstream.up')}")
    check({p.service for p in points} == {"toolgate"}, f"service.name: {({p.service for p in points})}")


async def otlp_metrics_match_the_calls(opts: argparse.Namespace) -> None:
    """O7: with telemetry.otlp_metrics, the metrics go to the receiver's /v1/metrics every
    metrics_interval, and count the calls made (tool, outcome, kind of error, histogram); the
    same numbers are at /metrics (one set of instruments)."""
    receiver = Receiver.start()
    telemetry = f"""  metrics: true
  otlp_metrics: true
  otlp_endpoint: {receiver.endpoint}
  metrics_interval: 200ms"""
    with serving(opts, None, telemetry) as serve:
        async with serve.http_client() as client:
            await five_calls(client)
        points = wait_for_points(
            receiver,
            lambda ps: sum(p.value for p in latest(ps, "toolgate.calls")) >= 5,
            "five calls in toolgate.calls",
        )
        check(receiver.exports() >= 1, "no export")
        check_five_calls(points)
        assert serve.url is not None
        text = scrape(serve.url.rsplit("/", 1)[0] + "/metrics")
    for line in [
        'toolgate_calls_total{kind="tool",tool="up.echo",outcome="ok"} 3',
        'toolgate_calls_total{kind="tool",tool="up.echo",outcome="denied"} 1',
        'toolgate_call_duration_seconds_count{kind="tool",tool="up.echo"} 4',
    ]:
        check(line in text, f"{line!r} not at /metrics:\n{text}")
    receiver.stop()


async def otlp_metrics_by_the_variables(opts: argparse.Namespace) -> None:
    """O7: without the policy saying so, OTEL_METRICS_EXPORTER=otlp turns the export on, to
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT; with the default interval (60 s) nothing is sent
    during the test, and what was counted is sent when serve stops."""
    receiver = Receiver.start()
    env = {
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"{receiver.endpoint}/v1/metrics",
    }
    with serving(opts, None, "  service_name: toolgate", env=env) as serve:
        async with serve.http_client() as client:
            await five_calls(client)
        check(receiver.exports() == 0, f"{receiver.exports()} exports before the interval or the stop")
    # serve stopped (SIGTERM): its last export has arrived.
    points = receiver.points()
    check(receiver.exports() >= 1, "serve stopped without exporting its metrics")
    check_five_calls(points, serving=False)
    receiver.stop()


async def grpc_carries_traces_and_metrics(opts: argparse.Namespace) -> None:
    """O8: OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends spans and metrics over gRPC to the
    collector's TraceService and MetricsService."""
    receiver = GrpcReceiver.start()
    telemetry = f"""  traces: true
  otlp_metrics: true
  otlp_endpoint: {receiver.endpoint}
  metrics_interval: 200ms"""
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with serving(opts, None, telemetry, env=env) as serve:
        async with serve.http_client() as client:
            await five_calls(client)
        wait_for_spans(
            receiver,
            lambda s: len([x for x in s if x.service == "toolgate" and x.name == "execute_tool up.echo"]) >= 4,
            "toolgate's four execute_tool up.echo spans over gRPC",
        )
        points = wait_for_points(
            receiver,
            lambda ps: sum(p.value for p in latest(ps, "toolgate.calls")) >= 5,
            "five calls in toolgate.calls over gRPC",
        )
    check_five_calls(points)
    receiver.stop()


SCENARIOS: dict[str, Callable[[argparse.Namespace], Any]] = {
    "call_span_attributes": call_span_attributes,
    "trace_goes_on": trace_goes_on,
    "trace_from_header": trace_from_header,
    "json_logs": json_logs,
    "prometheus_scrapes_calls": prometheus_scrapes_calls,
    "admin_address_over_stdio": admin_address_over_stdio,
    "otlp_metrics_match_the_calls": otlp_metrics_match_the_calls,
    "otlp_metrics_by_the_variables": otlp_metrics_by_the_variables,
    "grpc_carries_traces_and_metrics": grpc_carries_traces_and_metrics,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    asyncio.run(SCENARIOS[opts.scenario](opts))
    print(f"{opts.scenario}: ok")


if __name__ == "__main__":
    main()
