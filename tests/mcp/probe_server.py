#!/usr/bin/env python3
"""An MCP server on stdio with what `@modelcontextprotocol/server-everything` lacks, for the tests
of the tool shape `toolgate serve` passes on (tests/mcp/tool_shape.py, tests/tests/serve_tool_shape.rs).

Written with the Python SDK's `MCPServer` (FastMCP's successor in `mcp` 2.x). Every tool answers
with a `CallToolResult` it builds itself, so the blocks, annotations and `_meta` are exactly
these, and `liar`'s structured content reaches the wire unchecked.

Tools:
  weather {city}  title, annotations, icons, `_meta` and an outputSchema; answers with
                  annotated text (the JSON), structuredContent and a result `_meta`
  liar {}         declares the same outputSchema, answers with structured content it breaks
  audio {}        an annotated audio block with `_meta`
  resources {}    an annotated embedded text resource, an embedded binary resource and a
                  resource link with its title, description, size and icons
  rows {n}        an outputSchema `{"rows": [string]}`; answers with n rows as structured
                  content and as JSON text (for caps and offload)
"""

import json
from typing import Annotated

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("probe")

ICON = types.Icon(src="https://example.com/weather.png", mime_type="image/png", sizes=["48x48"])


class Weather(BaseModel):
    celsius: float
    conditions: str


class Rows(BaseModel):
    rows: list[str]


@server.tool(
    title="Weather Probe",
    description="The weather in a city, as structured content.",
    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    icons=[ICON],
    meta={"example.com/probe": {"kind": "weather"}},
)
def weather(city: str) -> Annotated[types.CallToolResult, Weather]:
    value = {"celsius": 21.5, "conditions": f"clear over {city}"}
    return types.CallToolResult(
        content=[
            types.TextContent(
                type="text",
                text=json.dumps(value),
                annotations=types.Annotations(audience=["assistant"], priority=0.5),
            )
        ],
        structured_content=value,
        _meta={"example.com/served-by": "probe"},
    )


@server.tool(description="Claims the weather's outputSchema and breaks it.")
def liar() -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text='{"celsius": "warm", "conditions": "sunny"}')],
        structured_content={"celsius": "warm", "conditions": "sunny"},
    )


# Published, not enforced by the SDK: a hand-built schema on a tool that returns a
# CallToolResult (see `FuncMetadata.convert_result`).
server._tool_manager.get_tool("liar").fn_metadata.output_schema = Weather.model_json_schema()


@server.tool(description="A short sound.")
def audio() -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.AudioContent(
                type="audio",
                data="UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=",
                mime_type="audio/wav",
                annotations=types.Annotations(audience=["user"], priority=0.25),
                _meta={"example.com/seconds": 0},
            )
        ]
    )


@server.tool(description="Resources, embedded and linked.")
def resources() -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="probe://notes/1", mime_type="text/plain", text="the first note"
                ),
                annotations=types.Annotations(audience=["assistant"]),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="probe://blobs/1", mime_type="application/octet-stream", blob="AAECAw=="
                ),
            ),
            types.ResourceLink(
                type="resource_link",
                uri="probe://notes/2",
                name="note-2",
                title="The second note",
                description="a note to read later",
                mime_type="text/plain",
                size=42,
                icons=[ICON],
            ),
        ]
    )


@server.tool(description="n rows, as structured content and as JSON text.")
def rows(n: int) -> Annotated[types.CallToolResult, Rows]:
    value = {"rows": [f"row {i}" for i in range(n)]}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(value))],
        structured_content=value,
    )


if __name__ == "__main__":
    server.run()
