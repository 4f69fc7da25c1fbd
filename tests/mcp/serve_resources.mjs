// Resources, templates, prompts, completion and subscriptions through `toolgate serve`, driven by
// the official TypeScript SDK's client (npm `@modelcontextprotocol/sdk` 1.32, installed by
// scripts/npm.sh into .tools/node) on Node 22, with `@modelcontextprotocol/server-everything`
// as the upstream (tests/mcp/policies/resources.yaml).
//
//   node tests/mcp/serve_resources.mjs --toolgate target/debug/toolgate --transport stdio read_and_list
//
// Each scenario prints `ok` when it holds; a failed check throws, saying what came back.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const POLICY = join(REPO, "tests", "mcp", "policies", "resources.yaml");
const SDK = join(REPO, ".tools", "node", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm");
const STATIC = "demo://resource/static/document/";

const sdk = async (path) => import(pathToFileURL(join(SDK, path)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ResourceUpdatedNotificationSchema } = await sdk("types.js");

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function args() {
  const out = {};
  const rest = process.argv.slice(2);
  for (let i = 0; i < rest.length; i++) {
    if (rest[i].startsWith("--")) out[rest[i].slice(2)] = rest[++i];
    else out.scenario = rest[i];
  }
  return out;
}

/** One `toolgate serve` and a way to connect clients to it; `stop()` ends it. */
async function serve(opts) {
  const results = mkdtempSync(join(tmpdir(), "toolgate-ts-"));
  const env = { ...process.env, TOOLGATE_RESULTS_DIR: join(results, "results"), RUST_LOG: "info" };
  const serveArgs = ["serve", "--policy", POLICY];
  if (opts.transport === "stdio") {
    return {
      transport: () => new StdioClientTransport({ command: opts.toolgate, args: serveArgs, env, stderr: "ignore" }),
      stop: async () => rmSync(results, { recursive: true, force: true }),
    };
  }
  const child = spawn(opts.toolgate, [...serveArgs, "--http", "127.0.0.1:0"], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const url = await new Promise((found, failed) => {
    const timer = setTimeout(() => failed(new Error(`serve did not say where it listens:\n${log}`)), 60_000);
    child.stderr.on("data", (chunk) => {
      log += chunk;
      // Up to the end of the line: a chunk may end inside the address.
      const m = log.match(/listening on (http:\/\/\S+)\s/);
      if (m) {
        clearTimeout(timer);
        found(m[1]);
      }
    });
    child.on("exit", (code) => failed(new Error(`serve exited (${code}):\n${log}`)));
  });
  return {
    transport: () => new StreamableHTTPClientTransport(new URL(url)),
    stop: async () => {
      const exited = new Promise((done) => child.on("exit", done));
      child.kill("SIGTERM");
      await exited;
      rmSync(results, { recursive: true, force: true });
    },
  };
}

async function connect(server) {
  const client = new Client({ name: "toolgate-test", version: "1.0.0" });
  await client.connect(server.transport());
  return client;
}

/** The error `promise` is refused with; fails when it is not refused. */
async function refused(promise) {
  try {
    const result = await promise;
    throw new Error(`expected an error, got ${JSON.stringify(result)}`);
  } catch (e) {
    if (e.code === undefined) throw e;
    return e;
  }
}

const scenarios = {
  async read_and_list(server) {
    const client = await connect(server);
    const caps = client.getServerCapabilities();
    check(caps.resources?.subscribe === true && caps.prompts && caps.completions, `capabilities: ${JSON.stringify(caps)}`);
    const { resources } = await client.listResources();
    check(resources.some((r) => r.uri === `${STATIC}architecture.md`), JSON.stringify(resources));
    const { resourceTemplates } = await client.listResourceTemplates();
    check(resourceTemplates.some((t) => t.uriTemplate === "demo://resource/dynamic/text/{resourceId}"), JSON.stringify(resourceTemplates));
    const read = await client.readResource({ uri: "demo://resource/dynamic/text/8" });
    check(read.contents.length === 1 && read.contents[0].text.startsWith("Resource 8:"), JSON.stringify(read));
    check(read._meta?.toolgate?.name === "demo://resource/dynamic/text/8", JSON.stringify(read._meta));

    const denied = await refused(client.readResource({ uri: `${STATIC}instructions.md` }));
    check(denied.code === -32001 && denied.message.includes("for the operator"), `${denied.code} ${denied.message}`);

    const big = await client.readResource({ uri: `${STATIC}structure.md` });
    const id = big._meta?.toolgate?.result_id;
    check(typeof id === "string" && big.contents[0].text.includes(id), JSON.stringify(big).slice(0, 500));
    const page = await client.callTool({ name: "read_tool_result", arguments: { id, offset: 0, limit: 100 } });
    check(!page.isError && page.content[0].text.startsWith("# Everything Server - Project Structure"), JSON.stringify(page).slice(0, 300));
    await client.close();
  },

  async prompts_and_completion(server) {
    const client = await connect(server);
    const { prompts } = await client.listPrompts();
    check(prompts.some((p) => p.name === "everything.completable-prompt"), JSON.stringify(prompts.map((p) => p.name)));
    const got = await client.getPrompt({ name: "everything.completable-prompt", arguments: { department: "Sales", name: "Eve" } });
    check(got.messages[0].content.text === "Please promote Eve to the head of the Sales team.", JSON.stringify(got));
    const done = await client.complete({
      ref: { type: "ref/prompt", name: "everything.completable-prompt" },
      argument: { name: "name", value: "" },
      context: { arguments: { department: "Support" } },
    });
    check(JSON.stringify(done.completion.values) === JSON.stringify(["John", "Kim", "Lee"]), JSON.stringify(done));
    const denied = await refused(client.getPrompt({ name: "everything.args-prompt", arguments: { city: "Atlantis" } }));
    check(denied.code === -32001 && denied.message.includes("Atlantis"), `${denied.code} ${denied.message}`);
    await client.close();
  },

  async subscribe(server) {
    const client = await connect(server);
    const updates = [];
    let arrived;
    const first = new Promise((done) => (arrived = done));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params.uri);
      arrived();
    });
    const uri = `${STATIC}how-it-works.md`;
    await client.subscribeResource({ uri });
    await client.callTool({ name: "everything.toggle-subscriber-updates", arguments: {} });
    await Promise.race([first, new Promise((_, failed) => setTimeout(() => failed(new Error("no update within 10 s")), 10_000))]);
    check(updates.every((u) => u === uri), JSON.stringify(updates));
    await client.callTool({ name: "everything.toggle-subscriber-updates", arguments: {} });
    await client.unsubscribeResource({ uri });
    await client.close();
  },
};

const opts = args();
const scenario = scenarios[opts.scenario];
check(scenario, `no scenario ${opts.scenario}; there are: ${Object.keys(scenarios).join(", ")}`);
const server = await serve(opts);
try {
  await scenario(server);
} finally {
  await server.stop();
}
console.log("ok");
process.exit(0);
