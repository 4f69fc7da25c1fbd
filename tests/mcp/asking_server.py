"""An MCP server (official Python SDK, PyPI `mcp`) that asks its client things during calls, for
toolgate's tests of what passes between an upstream server and the client behind `toolgate
serve`: sampling, elicitation, roots, logging, progress, cancellation, list changes.

    python tests/mcp/asking_server.py                      # stdio
    python tests/mcp/asking_server.py --http PORT          # Streamable HTTP on 127.0.0.1:PORT/mcp

Tools (each answers text; failures of the client or toolgate are reported in the text, so a
test sees exactly what the server got):
  sample {prompt, times}   -> `times` sampling/createMessage requests, one after the other;
                              JSON list, per request {"text": ...} or {"error": ...}
  sample_and_give_up {prompt, after_ms}
                           -> one sampling/createMessage, abandoned after `after_ms` (the
                              SDK sends notifications/cancelled); "gave up" or "answered"
  elicit {message}         -> one elicitation/create (a form with a `name` field);
                              JSON {"action", "content"} or {"error"}
  roots {}                 -> roots/list; JSON list of {"uri", "name"} or {"error"}
  log {level, logger, data}-> one notifications/message, then "logged"
  progress {steps}         -> `steps` notifications/progress with total and message, then "done"
  wait {marker}            -> waits up to 60 s; when cancelled, writes "cancelled" to `marker`
  change {list}            -> adds a tool, resource or prompt (`list`: tools, resources,
                              prompts) and sends that list's list_changed notification
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("probe")
added = {"tools": 0, "resources": 0, "prompts": 0}


class Name(BaseModel):
    name: str


def error_text(e: BaseException) -> str:
    return str(getattr(e, "error", None) and e.error.message or e)  # type: ignore[attr-defined]


@server.tool()
async def sample(prompt: str, ctx: Context, times: int = 1) -> str:
    """Ask the client's model, `times` times."""
    answers = []
    for i in range(times):
        try:
            result = await ctx.session.create_message(
                [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"{prompt} #{i + 1}"))],
                max_tokens=50,
                related_request_id=ctx.request_id,
            )
            content = result.content
            answers.append({"text": content.text if isinstance(content, types.TextContent) else str(content)})
        except Exception as e:  # noqa: BLE001 - the test reads what went wrong
            answers.append({"error": error_text(e)})
    return json.dumps(answers)


@server.tool()
async def sample_and_give_up(prompt: str, after_ms: int, ctx: Context) -> str:
    """Ask the client's model, and give up after `after_ms` (the SDK then sends
    notifications/cancelled for the request)."""
    with anyio.move_on_after(after_ms / 1000):
        await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
            max_tokens=50,
            related_request_id=ctx.request_id,
        )
        return "answered"
    return "gave up"


@server.tool()
async def elicit(message: str, ctx: Context) -> str:
    """Ask the client's user for a name."""
    try:
        result = await ctx.elicit(message, Name)
    except Exception as e:  # noqa: BLE001
        return json.dumps({"error": error_text(e)})
    data = result.data.model_dump() if getattr(result, "data", None) is not None else None
    return json.dumps({"action": result.action, "content": data})


@server.tool()
async def roots(ctx: Context) -> str:
    """List the client's roots."""
    try:
        listed = await ctx.session.send_request(
            types.ListRootsRequest(),
            types.ListRootsResult,
            metadata=None,
        )
    except Exception as e:  # noqa: BLE001
        return json.dumps({"error": error_text(e)})
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in listed.roots])


@server.tool()
async def log(level: str, logger: str, data: str, ctx: Context) -> str:
    """Send one log message."""
    await ctx.session.send_log_message(level=level, data=data, logger=logger, related_request_id=ctx.request_id)
    return "logged"


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress with a total and a message per step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i * 10, total=steps * 10, message=f"step {i} of {steps}")
        await anyio.sleep(0.05)
    return "done"


@server.tool()
async def wait(marker: str) -> str:
    """Wait up to 60 s; write "cancelled" to `marker` when cancelled."""
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        Path(marker).write_text("cancelled")
        raise
    return "waited"


@server.tool()
async def change(list: str, ctx: Context) -> str:
    """Add a tool, resource or prompt and say the list changed."""
    added[list] += 1
    n = added[list]
    if list == "tools":
        server.add_tool(lambda: "late", name=f"late_{n}", description="A tool added later.")
        await ctx.session.send_tool_list_changed()
    elif list == "resources":
        @server.resource(f"probe://late/{n}")
        def late_resource() -> str:
            return "late"
        await ctx.session.send_resource_list_changed()
    elif list == "prompts":
        @server.prompt(name=f"late_{n}")
        def late_prompt() -> str:
            return "late"
        await ctx.session.send_prompt_list_changed()
    return f"added {list} {n}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, help="serve Streamable HTTP on this port")
    opts = parser.parse_args()
    if opts.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=opts.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
