"""Resources, resource templates, prompts, completion and subscriptions through `toolgate serve`,
driven by the official MCP Python SDK (PyPI `mcp`) over stdio and HTTP, with
`@modelcontextprotocol/server-everything` as the upstream server (tests/mcp/policies/resources.yaml).

Each scenario checks one behaviour and exits 0 (printing `ok`) when it holds; the Rust tests in
tests/tests/serve_resources.rs run one scenario each:

    python tests/mcp/serve_resources.py --toolgate target/debug/toolgate --transport stdio a3_resources_and_templates_are_listed_and_read
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from serve_clients import check, serving, wait_for

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "tests" / "mcp" / "policies" / "resources.yaml"

STATIC = "demo://resource/static/document/"

# resources/subscribe is legacy in the newest revision; toolgate serves the revisions that have it.
warnings.simplefilter("ignore")


async def refused(call: Any) -> MCPError:
    """The error `call` is refused with; fails when it is not refused."""
    try:
        result = await call
    except MCPError as e:
        return e
    raise AssertionError(f"expected a JSON-RPC error, got {result!r}")


def toolgate_meta(result: Any) -> dict[str, Any]:
    return (result.meta or {}).get("toolgate") or {}


async def a3_resources_and_templates_are_listed_and_read(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            caps = client.server_capabilities
            check(caps.resources is not None and caps.resources.subscribe is True, f"resources declared with subscribe: {caps}")
            check(caps.prompts is not None and caps.completions is not None, f"prompts and completions declared: {caps}")

            listed = await client.list_resources()
            uris = [r.uri for r in listed.resources]
            check(STATIC + "architecture.md" in uris, f"the static documents are listed: {uris}")
            check(listed.next_cursor is None, "one page")

            templates = await client.list_resource_templates()
            check(
                {t.uri_template for t in templates.resource_templates}
                >= {"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"},
                f"the dynamic templates are listed: {templates}",
            )

            # A URI no server lists, routed by the template it matches.
            text = await client.read_resource("demo://resource/dynamic/text/3")
            check(len(text.contents) == 1, f"one content: {text}")
            content = text.contents[0]
            check(isinstance(content, types.TextResourceContents), f"text contents: {content!r}")
            check(content.uri == "demo://resource/dynamic/text/3", content.uri)
            check(content.mime_type == "text/plain", f"its MIME type is kept: {content!r}")
            check(content.text.startswith("Resource 3: This is a plaintext resource"), content.text)
            check(toolgate_meta(text).get("name") == "demo://resource/dynamic/text/3", f"{text.meta}")

            blob = await client.read_resource("demo://resource/dynamic/blob/2")
            content = blob.contents[0]
            check(isinstance(content, types.BlobResourceContents), f"binary contents pass whole: {content!r}")
            check(base64.b64decode(content.blob).startswith(b"Resource 2: This is a base64 blob"), content.blob)

            doc = await client.read_resource(STATIC + "architecture.md")
            check(doc.contents[0].mime_type == "text/markdown", f"{doc.contents[0]!r}")
            check("Architecture" in doc.contents[0].text, doc.contents[0].text[:200])
    print("ok")


async def a3_prompts_are_listed_under_their_server_and_got(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            listed = await client.list_prompts()
            by_name = {p.name: p for p in listed.prompts}
            check(
                {"everything.simple-prompt", "everything.args-prompt", "everything.completable-prompt"} <= set(by_name),
                f"prompts are named <server>.<prompt>: {sorted(by_name)}",
            )
            args = by_name["everything.args-prompt"]
            check(args.title == "Arguments Prompt", f"the title is kept: {args!r}")
            check([a.name for a in args.arguments or []] == ["city", "state"], f"the arguments are kept: {args!r}")

            got = await client.get_prompt("everything.args-prompt", {"city": "Paris", "state": "Texas"})
            check(len(got.messages) == 1 and got.messages[0].role == "user", f"{got}")
            check(got.messages[0].content.text == "What's weather in Paris, Texas?", f"{got}")

            # A prompt whose message embeds a resource: its text goes through the guard too.
            embedded = await client.get_prompt("everything.resource-prompt", {"resourceType": "Text", "resourceId": "4"})
            resources = [m.content for m in embedded.messages if isinstance(m.content, types.EmbeddedResource)]
            check(len(resources) == 1, f"the embedded resource is kept: {embedded}")
            check(resources[0].resource.text.startswith("Resource 4:"), f"{resources[0]!r}")

            unknown = await refused(client.get_prompt("args-prompt", {"city": "Paris"}))
            check(unknown.code == -32602, f"an unknown prompt is invalid params: {unknown.error}")
            check((unknown.data or {}).get("toolgate", {}).get("error_kind") == "unknown_prompt", f"{unknown.error}")
    print("ok")


async def a3_completion_reaches_the_prompts_server(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            prompt = types.PromptReference(type="ref/prompt", name="everything.completable-prompt")
            done = await client.complete(prompt, {"name": "department", "value": "E"})
            check(done.completion.values == ["Engineering"], f"{done}")
            # The arguments given so far reach the server, which narrows the next one by them.
            done = await client.complete(prompt, {"name": "name", "value": "A"}, {"department": "Engineering"})
            check(done.completion.values == ["Alice"], f"{done}")

            template = types.ResourceTemplateReference(type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}")
            done = await client.complete(template, {"name": "resourceId", "value": "7"})
            check(done.completion.values == ["7"], f"a template's argument is completed by its server: {done}")
    print("ok")


async def a4_a_subscribed_client_gets_the_servers_update(opts: argparse.Namespace) -> None:
    """Over HTTP two clients share one serve (and one upstream): each gets the updates of the
    URI it subscribed to, and never the other's. Over stdio, one client and its own serve."""
    async with serving(opts, POLICY) as server:
        first_uri, second_uri = STATIC + "architecture.md", STATIC + "extension.md"
        first_got: list[str] = []
        second_got: list[str] = []

        def handler(into: list[str]):
            async def on_message(message: Any) -> None:
                if isinstance(message, types.ResourceUpdatedNotification):
                    into.append(message.params.uri)
            return on_message

        async with server.client(message_handler=handler(first_got)) as first:
            await first.subscribe_resource(first_uri)
            if opts.transport == "http":
                async with server.client(message_handler=handler(second_got)) as second:
                    await second.subscribe_resource(second_uri)
                    # The server sends an update for each subscribed URI at once, then every 5 s;
                    # one sent before a client's event stream (its HTTP GET) is open does not
                    # reach it, so a loaded machine may see only the next round.
                    await first.call_tool("everything.toggle-subscriber-updates", {})
                    await wait_for(lambda: bool(first_got) and bool(second_got), "both clients' updates", 30)
                    check(set(first_got) == {first_uri}, f"the first client gets its URI only: {first_got}")
                    check(set(second_got) == {second_uri}, f"the second client gets its URI only: {second_got}")
                    await first.call_tool("everything.toggle-subscriber-updates", {})
            else:
                await first.call_tool("everything.toggle-subscriber-updates", {})
                await wait_for(lambda: bool(first_got), "the update", 30)
                check(set(first_got) == {first_uri}, f"{first_got}")
                await first.call_tool("everything.toggle-subscriber-updates", {})
            await first.unsubscribe_resource(first_uri)

            missing = await refused(first.subscribe_resource("demo://nowhere/at/all"))
            check(missing.code == -32002, f"a URI no server has cannot be watched: {missing.error}")
            denied = await refused(first.subscribe_resource(STATIC + "instructions.md"))
            check(denied.code == -32001 and "for the operator" in denied.message, f"a denied URI cannot be watched: {denied.error}")
    print("ok")


async def a_denied_resource_uri_is_refused(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            for spelling in ["instructions.md", "./%69nstructions.md", "../document/instructions.md"]:
                e = await refused(client.read_resource(STATIC + spelling))
                check(e.code == -32001, f"{spelling}: denied is -32001: {e.error}")
                check("the server's instructions are for the operator" in e.message, f"{spelling}: the rule's reason: {e.message}")
                check((e.data or {}).get("toolgate", {}).get("error_kind") == "denied", f"{e.error}")
            # The rest of the server's resources stay readable.
            await client.read_resource(STATIC + "architecture.md")
    print("ok")


async def a_denied_prompt_is_refused(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            e = await refused(client.get_prompt("everything.resource-prompt", {"resourceType": "Blob", "resourceId": "1"}))
            check(e.code == -32001, f"{e.error}")
            check("prompts carry text here" in e.message, f"the rule's reason: {e.message}")
            e = await refused(client.get_prompt("everything.args-prompt", {"city": "Atlantis"}))
            check(e.code == -32001, f"{e.error}")
            check("no prompts about Atlantis" in e.message, f"the before hook's reason: {e.message}")
            got = await client.get_prompt("everything.args-prompt", {"city": "Rome"})
            check("Rome" in got.messages[0].content.text, f"{got}")
    print("ok")


async def a_large_resource_is_offloaded_and_paged_back(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            big = await client.read_resource(STATIC + "features.md")
            meta = toolgate_meta(big)
            result_id = meta.get("result_id")
            check(isinstance(result_id, str), f"offloaded with an id: {big.meta}")
            check(len(big.contents) == 1, f"one text item holds the notice: {big}")
            notice = big.contents[0].text
            check(notice.startswith("[This resource is too large to show here"), notice[:300])
            check(result_id in notice and "read_tool_result" in notice, notice[:400])
            check("--- first 1000 characters ---\n# Everything Server - Features" in notice, notice[:600])

            pages = []
            offset = 0
            while offset is not None:
                page = await client.call_tool("read_tool_result", {"id": result_id, "offset": offset, "limit": 4000})
                check(not page.is_error, f"{page}")
                text = page.content[0].text
                body, _, trailer = text.rpartition("\n\n[tool result ")
                pages.append(body)
                found = [w for w in trailer.split() if w.startswith("next_offset=")]
                offset = int(found[0].split("=")[1].rstrip("]")) if found else None
            whole = "".join(pages)
            chars = int(notice.split(" characters).")[0].rsplit("(", 1)[1])
            check(len(whole) == chars, f"every character came back: {len(whole)} of {chars}")
            check(whole.startswith("# Everything Server - Features"), whole[:100])
            check(whole.rstrip().endswith("`tasks/result` to retrieve the result"), whole[-200:])
    print("ok")


async def a_before_and_after_hooks_see_every_read_and_get(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            await client.read_resource("demo://resource/dynamic/text/5")
            await client.get_prompt("everything.simple-prompt")
            await wait_for(
                lambda: "after hook saw a resource: demo://resource/dynamic/text/5 (asked as" in server.log_text()
                and "after hook saw a prompt: everything.simple-prompt (asked as" in server.log_text(),
                "the after hook's lines in the log",
            )
    print("ok")


async def aliases_reach_the_real_resource_and_prompt(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            doc = await client.read_resource("docs://architecture")
            check(doc.contents[0].uri == STATIC + "architecture.md", f"the server's own URI: {doc.contents[0]!r}")
            check(toolgate_meta(doc).get("name") == STATIC + "architecture.md", f"{doc.meta}")
            got = await client.get_prompt("weather", {"city": "Oslo"})
            check(got.messages[0].content.text == "What's weather in Oslo?", f"{got}")
            await wait_for(
                lambda: f"after hook saw a resource: {STATIC}architecture.md (asked as docs://architecture)" in server.log_text()
                and "after hook saw a prompt: everything.args-prompt (asked as weather)" in server.log_text(),
                "the hooks' view of both names",
            )
    print("ok")


async def pinned_definitions_that_changed_are_held_back(opts: argparse.Namespace) -> None:
    """`toolgate upstream pin` records server-everything's definitions; a resource whose pin no
    longer matches and a prompt without a pin are then held back, the rest is offered."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text("version: 1\nmcp_servers:\n  - name: everything\n    command: [mcp-server-everything]\n")
        pinned = subprocess.run([opts.toolgate, "upstream", "pin", str(policy)], capture_output=True, text=True, timeout=120)
        check(pinned.returncode == 0, f"upstream pin failed: {pinned.stderr}")
        pins_file = Path(tmp) / "policy.pins.json"
        pins = json.loads(pins_file.read_text())
        server = pins["servers"]["everything"]
        changed = server["resources"][STATIC + "architecture.md"]
        changed["sha256"] = "0" * 64
        changed["fields"]["description"] = "0" * 64
        del server["prompts"]["simple-prompt"]
        pins_file.write_text(json.dumps(pins))

        async with serving(opts, policy) as gateway:
            async with gateway.client() as client:
                uris = [r.uri for r in (await client.list_resources()).resources]
                check(STATIC + "architecture.md" not in uris, f"the changed resource is held back: {uris}")
                check(STATIC + "extension.md" in uris, f"the others are offered: {uris}")
                e = await refused(client.read_resource(STATIC + "architecture.md"))
                check(e.code == -32002, f"a held-back resource cannot be read: {e.error}")
                names = [p.name for p in (await client.list_prompts()).prompts]
                check("everything.simple-prompt" not in names and "everything.args-prompt" in names, f"{names}")
                e = await refused(client.get_prompt("everything.simple-prompt"))
                check(e.code == -32602, f"a held-back prompt cannot be got: {e.error}")
                await wait_for(
                    lambda: 'its resource "demo://resource/static/document/architecture.md" is held back: its definition changed since it was pinned (description changed)' in gateway.log_text()
                    and 'its prompt "simple-prompt" is held back: it is not pinned' in gateway.log_text(),
                    "the warnings that name what is held back and why",
                )
    print("ok")


async def the_lists_are_paged(opts: argparse.Namespace) -> None:
    """With serve.page_size 2, each list comes in pages that together hold every item once."""
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(POLICY.read_text() + "\nserve:\n  page_size: 2\n")
        async with serving(opts, policy) as server:
            async with server.client() as client:
                for lister, items, key in [
                    (client.list_resources, "resources", "uri"),
                    (client.list_resource_templates, "resource_templates", "uri_template"),
                    (client.list_prompts, "prompts", "name"),
                ]:
                    seen, cursor, pages = [], None, 0
                    while True:
                        page = await lister(cursor=cursor)
                        got = [getattr(i, key) for i in getattr(page, items)]
                        check(len(got) <= 2, f"{items}: at most 2 a page: {got}")
                        seen.extend(got)
                        pages += 1
                        cursor = page.next_cursor
                        if cursor is None:
                            break
                    check(len(seen) == len(set(seen)) and seen == sorted(seen), f"{items}: each once, in order: {seen}")
                    check(pages == (len(seen) + 1) // 2, f"{items}: {pages} pages for {len(seen)}")
                check(len(seen) >= 4, f"every prompt: {seen}")
                e = await refused(client.list_resources(cursor="not-a-cursor"))
                check(e.code == -32602, f"a cursor serve did not give is refused: {e.error}")
    print("ok")


async def an_unknown_resource_is_not_found(opts: argparse.Namespace) -> None:
    async with serving(opts, POLICY) as server:
        async with server.client() as client:
            e = await refused(client.read_resource("demo://nowhere/at/all"))
            check(e.code == -32002, f"{e.error}")
            check((e.data or {}).get("toolgate", {}).get("error_kind") == "unknown_resource", f"{e.error}")
            check("no MCP server of the policy lists this resource" in e.message, e.message)
            # A template's URI the server itself does not know: its own "not found".
            e = await refused(client.read_resource("demo://resource/dynamic/text/0"))
            check((e.data or {}).get("toolgate", {}).get("error_kind") in {"unknown_resource", "upstream_error"}, f"{e.error}")
    print("ok")


SCENARIOS = {f.__name__: f for f in [
    a3_resources_and_templates_are_listed_and_read, a3_prompts_are_listed_under_their_server_and_got,
    a3_completion_reaches_the_prompts_server, a4_a_subscribed_client_gets_the_servers_update,
    a_denied_resource_uri_is_refused, a_denied_prompt_is_refused, a_large_resource_is_offloaded_and_paged_back,
    a_before_and_after_hooks_see_every_read_and_get, an_unknown_resource_is_not_found,
    aliases_reach_the_real_resource_and_prompt, pinned_definitions_that_changed_are_held_back,
    the_lists_are_paged,
]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    opts = parser.parse_args()
    asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), 120))


if __name__ == "__main__":
    main()
