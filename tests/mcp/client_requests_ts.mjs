// What passes between an upstream MCP server and the client behind `toolgate serve`, seen by the
// TypeScript SDK's client (npm `@modelcontextprotocol/sdk` 1.32, installed by scripts/npm.sh),
// over stdio or Streamable HTTP. Run with the Node 22 of scripts/npm.sh:
//
//   node tests/mcp/client_requests_ts.mjs --toolgate target/debug/toolgate --transport stdio everything
//
// Scenarios:
//   everything  server-everything behind toolgate with every client request allowed: its
//               sampling, elicitation and roots requests reach this client and its answers go
//               back; a log message arrives with level and logger; progress with its total.
//   refused     the asking server (tests/mcp/asking_server.py) with nothing allowed: its requests
//               never reach this client's handlers, and the server is told the policy refuses.
//
// Prints "ok" and exits 0 when the scenario holds; otherwise exits 1 saying what was wrong.

import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MODULES = join(REPO, ".tools", "node", "node_modules");
const SDK = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
const sdk = (path) => import(pathToFileURL(join(SDK, path)).href);

const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} = await sdk("types.js");

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function option(name) {
  const i = process.argv.indexOf(name);
  check(i > 0 && i + 1 < process.argv.length, `missing ${name}`);
  return process.argv[i + 1];
}

const toolgate = option("--toolgate");
const transport = option("--transport");
const scenario = process.argv[process.argv.length - 1];
const python = join(REPO, ".tools", "venv", "bin", "python");
const workdir = mkdtempSync(join(tmpdir(), "toolgate-ts-"));

function writePolicy(lines) {
  const policy = join(workdir, "policy.yaml");
  writeFileSync(policy, ["version: 1", "mcp_servers:", ...lines, ""].join("\n"));
  return policy;
}

const everything = [
  "  - name: every",
  `    command: ${JSON.stringify([
    process.execPath,
    join(MODULES, "@modelcontextprotocol", "server-everything", "dist", "index.js"),
    "stdio",
  ])}`,
  "    client_requests: {sampling: allow, elicitation: allow, roots: allow}",
];
const probe = [
  "  - name: probe",
  `    command: ${JSON.stringify([python, join(REPO, "tests", "mcp", "asking_server.py")])}`,
];

/** Starts `toolgate serve` over HTTP; resolves with its URL and the process. */
function serveHttp(policy) {
  return new Promise((resolve, reject) => {
    const child = spawn(toolgate, ["serve", "--policy", policy, "--http", "127.0.0.1:0"], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, TOOLGATE_RESULTS_DIR: join(workdir, "results") },
    });
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`serve did not listen within 60 s:\n${seen}`)), 60000);
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      // The whole line: a chunk may end in the middle of the port.
      const found = /listening on (http:\/\/\S+)\r?\n/.exec(seen);
      if (found) {
        clearTimeout(timer);
        resolve({ url: found[1], child });
      }
    });
    child.on("exit", (code) => reject(new Error(`serve exited (${code}):\n${seen}`)));
  });
}

/** A connected client with handlers that count what reached them, and a close function. */
async function connect(policy) {
  const seen = { sampling: [], elicitation: [], roots: 0, logs: [] };
  const client = new Client(
    { name: "toolgate-ts-test", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    seen.sampling.push(request.params);
    return {
      role: "assistant",
      content: { type: "text", text: `ts answers ${request.params.messages[0].content.text}` },
      model: "ts-model",
    };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    seen.elicitation.push(request.params);
    return { action: "accept", content: { name: "Grace", check: true } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    seen.roots += 1;
    return { roots: [{ uri: "file:///work/ts", name: "ts" }] };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    seen.logs.push(notification.params);
  });
  // A progress notification that arrives with the call's result in one read is handled by the
  // SDK after the result (notification handlers run on a later microtask) and reported here as
  // one "for an unknown token": it did arrive.
  const errors = [];
  client.onerror = (error) => errors.push(String(error));
  seen.errors = errors;
  let server = null;
  let channel;
  if (transport === "stdio") {
    channel = new StdioClientTransport({
      command: toolgate,
      args: ["serve", "--policy", policy],
      env: { ...process.env, TOOLGATE_RESULTS_DIR: join(workdir, "results") },
      stderr: "ignore",
    });
  } else {
    server = await serveHttp(policy);
    channel = new StreamableHTTPClientTransport(new URL(server.url));
  }
  await client.connect(channel);
  const close = async () => {
    await client.close();
    if (server) {
      server.child.removeAllListeners("exit");
      server.child.kill("SIGTERM");
    }
  };
  return { client, seen, close };
}

const text = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

async function waitFor(predicate, what) {
  const deadline = Date.now() + 10000;
  while (!predicate()) {
    check(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const scenarios = {
  async everything() {
    const { client, seen, close } = await connect(writePolicy(everything));
    try {
      const sampled = await client.callTool({
        name: "every.trigger-sampling-request",
        arguments: { prompt: "from ts", maxTokens: 30 },
      });
      check(seen.sampling.length === 1, `sampling requests seen: ${seen.sampling.length}`);
      check(seen.sampling[0].maxTokens === 30, `asked: ${JSON.stringify(seen.sampling[0])}`);
      check(text(sampled).includes("ts answers Resource trigger-sampling-request context: from ts"), text(sampled));

      const elicited = await client.callTool({ name: "every.trigger-elicitation-request", arguments: {} });
      check(seen.elicitation.length === 1, `elicitations seen: ${seen.elicitation.length}`);
      check(seen.elicitation[0].requestedSchema.properties.email.format === "email", "the schema lost a format");
      check(text(elicited).includes("- Name: Grace"), text(elicited));

      const roots = await client.callTool({ name: "every.get-roots-list", arguments: {} });
      check(seen.roots >= 1 && text(roots).includes("URI: file:///work/ts"), text(roots));
      // get-roots-list logs what it received, with the server's logger name.
      await waitFor(
        () => seen.logs.some((l) => l.logger === "everything-server" && l.level === "info"),
        `a log message with its level and logger (got ${JSON.stringify(seen.logs)})`,
      );

      const progress = [];
      await client.callTool(
        { name: "every.trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
        undefined,
        { onprogress: (p) => progress.push([p.progress, p.total]) },
      );
      const last = progress[progress.length - 1];
      const lateLast = seen.errors.some(
        (e) => e.includes("unknown token") && e.includes('"progress":3') && e.includes('"total":3'),
      );
      check(
        (last && last[0] === 3 && last[1] === 3) || lateLast,
        `progress: ${JSON.stringify(progress)}, errors: ${JSON.stringify(seen.errors)}`,
      );
      check(progress.every(([, total]) => total === 3), `a total was lost: ${JSON.stringify(progress)}`);
    } finally {
      await close();
    }
  },

  async refused() {
    const { client, seen, close } = await connect(writePolicy(probe));
    try {
      const sampled = JSON.parse(text(await client.callTool({ name: "probe.sample", arguments: { prompt: "p" } })));
      const elicited = JSON.parse(text(await client.callTool({ name: "probe.elicit", arguments: { message: "m" } })));
      const roots = JSON.parse(text(await client.callTool({ name: "probe.roots", arguments: {} })));
      for (const [got, key] of [[sampled[0], "sampling"], [elicited, "elicitation"], [roots, "roots"]]) {
        check(
          (got.error ?? "").includes("policy refuses") && got.error.includes(`client_requests.${key}`),
          `the server got ${JSON.stringify(got)}`,
        );
      }
      check(
        seen.sampling.length === 0 && seen.elicitation.length === 0 && seen.roots === 0,
        `refused requests reached the client: ${JSON.stringify(seen)}`,
      );
    } finally {
      await close();
    }
  },
};

try {
  check(scenario in scenarios, `no scenario ${scenario}`);
  await scenarios[scenario]();
  console.log("ok");
  rmSync(workdir, { recursive: true, force: true });
  process.exit(0);
} catch (error) {
  console.error(error.stack ?? String(error));
  process.exit(1);
}
