"""Tools and results as their upstream MCP servers define them, seen through `toolgate serve` by
the official MCP Python SDK (PyPI `mcp` 2.x), over stdio and HTTP (issue 26, item 1).

The upstreams are `@modelcontextprotocol/server-everything` (npm) and tests/mcp/probe_server.py
(what everything lacks: icons, a tool `_meta`, audio, a result `_meta`, structured content that
breaks its schema). Each scenario checks one behaviour and exits 0 when it holds; most compare
what the client gets through toolgate with what the same client gets from the server directly.
The Rust tests in tests/tests/serve_tool_shape.rs run one scenario each:

    python tests/mcp/tool_shape.py --toolgate target/debug/toolgate --transport stdio \\
        tool_definitions_are_the_upstreams

`mcp-server-everything` must be on PATH (the Rust tests put .tools/node/node_modules/.bin there).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_clients import check, kind_of, serving, text_of  # noqa: E402

HERE = Path(__file__).resolve().parent
POLICY = HERE / "policies" / "tool-shape.yaml"
OPENAI = HERE / "policies" / "tool-shape-openai.yaml"
PROBE = HERE / "probe_server.py"

# The definition fields a client sees of a tool. `execution` (2025-11-25 tasks) is not among
# them: rmcp 3.11, which toolgate speaks MCP with, has no field for it (toolgate runs no tasks).
FIELDS = ["title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta"]


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def blocks(result: types.CallToolResult) -> list[Any]:
    """The content blocks as JSON, with the clock time server-everything writes into its dynamic
    resources (their text, or the text inside a blob) masked: two calls a moment apart differ
    only there."""
    mask = lambda text: re.sub(r"\d{1,2}:\d{2}:\d{2} [AP]M", "<time>", text)  # noqa: E731
    out = []
    for block in (dump(c) for c in result.content):
        resource = block.get("resource") or {}
        if "blob" in resource:
            resource["blob"] = mask(base64.b64decode(resource["blob"]).decode("utf-8", "replace"))
        out.append(json.loads(mask(json.dumps(block))))
    return out


def meta(result: types.CallToolResult) -> dict[str, Any]:
    return dict(result.meta or {})


def direct(server: str) -> Client:
    """A client of the upstream itself, started as the policy starts it."""
    if server == "everything":
        params = StdioServerParameters(command="mcp-server-everything", args=[])
    else:
        params = StdioServerParameters(command=sys.executable, args=[str(PROBE)])
    return Client(stdio_client(params, errlog=open("/dev/null", "w")))


def without_protocol_keys(meta: dict[str, Any]) -> dict[str, Any]:
    """A result `_meta` without the keys MCP reserves for the protocol (they describe the hop
    they came on, so toolgate leaves the upstream's out) nor toolgate's own."""
    return {
        k: v
        for k, v in meta.items()
        if k != "toolgate" and not any(label in ("modelcontextprotocol", "mcp") for label in k.split("/")[0].split("."))
    }


# ---------------------------------------------------------------------------------------------
# scenarios


async def tool_definitions_are_the_upstreams(opts: argparse.Namespace) -> None:
    """Every tool of both upstreams is listed with the title, description, schemas, annotations,
    icons and `_meta` its server gives it."""
    upstream: dict[str, dict[str, Any]] = {}
    for server in ("everything", "probe"):
        async with direct(server) as client:
            for tool in (await client.list_tools()).tools:
                upstream[f"{server}.{tool.name}"] = dump(tool)
    async with serving(opts, POLICY) as gateway, gateway.client(mode=opts.mode) as client:
        served = {t.name: dump(t) for t in (await client.list_tools()).tools}
    missing = sorted(set(upstream) - set(served))
    check(not missing, f"upstream tools not served: {missing}")
    for name, want in upstream.items():
        for field in FIELDS:
            check(
                served[name].get(field) == want.get(field),
                f"{name}: {field} is {served[name].get(field)!r} through toolgate, {want.get(field)!r} upstream",
            )
    weather = served["probe.weather"]
    check(weather["icons"][0]["src"] == "https://example.com/weather.png", f"icons: {weather}")
    check(weather["_meta"] == {"example.com/probe": {"kind": "weather"}}, f"_meta: {weather}")
    check("outputSchema" in served["everything.get-structured-content"], "everything's outputSchema is lost")


async def structured_content_and_result_meta_reach_the_client(opts: argparse.Namespace) -> None:
    """structuredContent comes through as the server sent it (and passes the client's own check
    against the outputSchema), and the result's `_meta` keeps the server's keys beside toolgate's."""
    async with direct("everything") as client:
        await client.list_tools()
        want = await client.call_tool("get-structured-content", {"location": "Chicago"})
    async with serving(opts, POLICY) as gateway, gateway.client(mode=opts.mode) as client:
        await client.list_tools()  # the client learns the outputSchemas it checks results against
        got = await client.call_tool("everything.get-structured-content", {"location": "Chicago"})
        weather = await client.call_tool("probe.weather", {"city": "Oslo"})
    check(got.is_error is False, f"get-structured-content: {got}")
    check(got.structured_content == want.structured_content, f"{got.structured_content} != {want.structured_content}")
    check([dump(c) for c in got.content] == [dump(c) for c in want.content], f"content: {got.content}")
    check(weather.structured_content == {"celsius": 21.5, "conditions": "clear over Oslo"}, f"weather: {weather}")
    check(meta(weather).get("example.com/served-by") == "probe", f"the server's _meta key is lost: {meta(weather)}")
    check(meta(weather)["toolgate"]["tool_name"] == "probe.weather", f"toolgate's _meta: {meta(weather)}")
    check(
        dump(weather.content[0]).get("annotations") == {"audience": ["assistant"], "priority": 0.5},
        f"content annotations: {weather.content}",
    )


async def every_content_type_passes_with_its_annotations(opts: argparse.Namespace) -> None:
    """Annotated text and images, embedded resources (text and binary), resource links and audio
    reach the client block for block as the servers sent them."""
    calls = [
        ("everything", "get-annotated-message", {"messageType": "success", "includeImage": True}),
        ("everything", "get-resource-links", {"count": 3}),
        ("everything", "get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
        ("everything", "get-resource-reference", {"resourceType": "Blob", "resourceId": 3}),
        ("probe", "audio", {}),
        ("probe", "resources", {}),
    ]
    want: list[types.CallToolResult] = []
    for server in ("everything", "probe"):
        async with direct(server) as client:
            for s, tool, args in calls:
                if s == server:
                    want.append(await client.call_tool(tool, args))
    async with serving(opts, POLICY) as gateway, gateway.client(mode=opts.mode) as client:
        got = [await client.call_tool(f"{s}.{tool}", args) for s, tool, args in calls]
    kinds = set()
    for (server, tool, args), w, g in zip(calls, want, got):
        check(g.is_error is False, f"{tool} {args}: {g}")
        check(
            blocks(g) == blocks(w),
            f"{server}.{tool} {args}:\n through toolgate {blocks(g)}\n upstream {blocks(w)}",
        )
        check(without_protocol_keys(meta(g)) == without_protocol_keys(meta(w)), f"{tool}: _meta {meta(g)} != {meta(w)}")
        kinds.update(c.type for c in g.content)
    check(kinds >= {"text", "image", "audio", "resource", "resource_link"}, f"content types seen: {kinds}")


async def structured_content_that_breaks_its_schema_is_a_tool_error(opts: argparse.Namespace) -> None:
    """A server whose structured content does not match its own outputSchema gets the call an
    error result of kind invalid_structured_content that says where, not a client-side failure."""
    async with serving(opts, POLICY) as gateway, gateway.client(mode=opts.mode) as client:
        await client.list_tools()
        result = await client.call_tool("probe.liar", {})
    check(result.is_error is True, f"liar: {result}")
    check(kind_of(result) == "invalid_structured_content", f"kind {kind_of(result)!r}")
    check(result.structured_content is None, f"the bad content was passed on: {result.structured_content}")
    text = text_of(result)
    check("does not match its outputSchema" in text and "(at /celsius)" in text, f"liar said {text!r}")


async def structured_content_over_the_threshold_is_offloaded_and_paged(opts: argparse.Namespace) -> None:
    """rows over reduction.max_result_bytes: the client gets the notice and the id (isError, as
    MCP asks of a tool with an outputSchema whose success lacks structured content), and pages the
    whole JSON back with read_tool_result."""
    n = 600
    async with serving(opts, POLICY) as gateway, gateway.client(mode=opts.mode) as client:
        await client.list_tools()
        result = await client.call_tool("probe.rows", {"n": n})
        toolgate = meta(result)["toolgate"]
        check(result.is_error is True, f"rows: {result}")
        check(toolgate["error_kind"] == "structured_content_withheld", f"_meta.toolgate: {toolgate}")
        check(result.structured_content is None, "the structured content over the threshold came through")
        rid = toolgate["result_id"]
        check(isinstance(rid, str) and rid in text_of(result) and "read_tool_result" in text_of(result), f"notice: {text_of(result)!r}")
        whole, offset = "", 0
        while True:
            page = await client.call_tool("read_tool_result", {"id": rid, "offset": offset, "limit": 2000})
            check(page.is_error is False, f"read_tool_result: {page}")
            body, footer = text_of(page).rsplit("\n\n[tool result ", 1)
            whole += body
            if "next_offset=" not in footer:
                break
            offset = int(footer.split("next_offset=")[1].rstrip("]"))
    check(json.loads(whole) == {"rows": [f"row {i}" for i in range(n)]}, f"paged back: {whole[:200]}...")


async def openai_names_keep_the_real_name_in_meta(opts: argparse.Namespace) -> None:
    """Under name_profile: openai a client sees probe_weather; `_meta.toolgate.tool_name` of the
    tool and of its results says probe.weather, beside the server's own `_meta` keys."""
    async with serving(opts, OPENAI) as gateway, gateway.client(mode=opts.mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        check("probe_weather" in tools and "probe.weather" not in tools, f"names: {sorted(tools)}")
        tool_meta = dict(tools["probe_weather"].meta or {})
        check(tool_meta.get("toolgate") == {"tool_name": "probe.weather"}, f"tool _meta: {tool_meta}")
        check(tool_meta.get("example.com/probe") == {"kind": "weather"}, f"the server's key is lost: {tool_meta}")
        result = await client.call_tool("probe_weather", {"city": "Oslo"})
    check(result.is_error is False, f"probe_weather: {result}")
    check(meta(result)["toolgate"]["tool_name"] == "probe.weather", f"result _meta: {meta(result)}")
    check(result.structured_content == {"celsius": 21.5, "conditions": "clear over Oslo"}, f"{result}")


async def plugin_tools_declare_and_return_their_shape(opts: argparse.Namespace) -> None:
    """A plugin's tools (the `shaped` test plugin, in process and in a worker process) show the
    title, annotations and outputSchema of its manifest; their structured results pass the
    client's check, and one that breaks its schema is invalid_structured_content."""
    library = Path(opts.toolgate).resolve().parent / "libtoolgate_test_shaped.so"
    check(library.is_file(), f"{library} is not built: run `cargo build --workspace` first")
    for isolation in ("in_process", "process"):
        with tempfile.TemporaryDirectory() as tmp:
            policy = Path(tmp) / "policy.yaml"
            policy.write_text(f"version: 1\nplugins:\n  - path: {library}\n    isolation: {isolation}\n")
            async with serving(opts, policy) as gateway, gateway.client(mode=opts.mode) as client:
                tools = {t.name: dump(t) for t in (await client.list_tools()).tools}
                rows = await client.call_tool("shaped.rows", {"n": 3})
                liar = await client.call_tool("shaped.liar", {})
        shown = tools["shaped.rows"]
        check(shown.get("title") == "Rows", f"{isolation}: title {shown}")
        check(
            shown.get("annotations") == {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
            f"{isolation}: annotations {shown}",
        )
        check(shown.get("outputSchema", {}).get("required") == ["rows"], f"{isolation}: outputSchema {shown}")
        want = {"rows": ["row 0", "row 1", "row 2"]}
        check(rows.is_error is False and rows.structured_content == want, f"{isolation}: rows {rows}")
        check(json.loads(text_of(rows)) == want, f"{isolation}: the text is not the JSON: {text_of(rows)!r}")
        check(kind_of(liar) == "invalid_structured_content" and "(at /rows)" in text_of(liar), f"{isolation}: liar {liar}")


SCENARIOS = {f.__name__: f for f in [
    tool_definitions_are_the_upstreams,
    structured_content_and_result_meta_reach_the_client,
    every_content_type_passes_with_its_annotations,
    structured_content_that_breaks_its_schema_is_a_tool_error,
    structured_content_over_the_threshold_is_offloaded_and_paged,
    openai_names_keep_the_real_name_in_meta,
    plugin_tools_declare_and_return_their_shape,
]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--mode", choices=["auto", "legacy"], default="auto", help="the client's connect mode")
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 180))
    print("ok")


if __name__ == "__main__":
    main()
