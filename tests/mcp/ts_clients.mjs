// `toolgate serve` driven by the official TypeScript MCP clients: the SDK 1.x client
// (`@modelcontextprotocol/sdk`, 2025 revisions only) and the 2.x client
// (`@modelcontextprotocol/client`, which speaks 2026-07-28 when `versionNegotiation` asks it
// to). Run with the Node that scripts/npm.sh installs:
//
//   node tests/mcp/ts_clients.mjs --client v2-auto --transport stdio --toolgate target/debug/toolgate \
//       --policy tests/mcp/policies/testkit.yaml connect_list_call
//
// --client: `v1` (SDK 1.32), `v2-legacy` (2.4, versionNegotiation mode legacy), `v2-auto` (2.4,
// mode auto), with --offer VERSION to offer only that revision. --transport: `stdio` (the client starts serve), or `http` with --url of a
// running serve. Each scenario prints one JSON object on stdout (what the Rust test checks)
// and exits 0; a failed step throws.

import { pathToFileURL } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const MODULES = path.join(REPO, '.tools', 'node', 'node_modules', '@modelcontextprotocol');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const clientKind = arg('client', 'v2-auto');
const transportKind = arg('transport', 'stdio');
const scenario = process.argv[process.argv.length - 1];

async function load(file) {
  const full = path.join(MODULES, file);
  if (!fs.existsSync(full)) {
    throw new Error(`${full} is missing: run \`bash scripts/npm.sh\` first`);
  }
  return import(pathToFileURL(full).href);
}

/** A connected client of the kind asked for, and how long connecting took. */
async function connect() {
  const serveArgs = ['serve', '--policy', arg('policy'), ...(arg('serve-args', '') || '').split(' ').filter(Boolean)];
  const env = { ...process.env };
  let Client, transport;
  if (clientKind === 'v1') {
    ({ Client } = await load('sdk/dist/esm/client/index.js'));
    if (transportKind === 'stdio') {
      const { StdioClientTransport } = await load('sdk/dist/esm/client/stdio.js');
      transport = new StdioClientTransport({ command: arg('toolgate'), args: serveArgs, env, stderr: 'inherit' });
    } else {
      const { StreamableHTTPClientTransport } = await load('sdk/dist/esm/client/streamableHttp.js');
      transport = new StreamableHTTPClientTransport(new URL(arg('url')));
    }
  } else {
    ({ Client } = await load('client/dist/index.mjs'));
    if (transportKind === 'stdio') {
      const { StdioClientTransport } = await load('client/dist/stdio.mjs');
      transport = new StdioClientTransport({ command: arg('toolgate'), args: serveArgs, env, stderr: 'inherit' });
    } else {
      const { StreamableHTTPClientTransport } = await load('client/dist/index.mjs');
      transport = new StreamableHTTPClientTransport(new URL(arg('url')));
    }
  }
  // What the server agreed to, as the client tells its transport.
  const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    transport.agreedProtocolVersion = version;
    setProtocolVersion?.(version);
  };
  const options = clientKind === 'v1' ? {} : { versionNegotiation: { mode: clientKind === 'v2-auto' ? 'auto' : 'legacy' } };
  // --offer VERSION: the 2.x client offers only this revision (2025-03-26, 2025-06-18, ...).
  if (arg('offer')) {
    options.supportedProtocolVersions = [arg('offer')];
  }
  const client = new Client({ name: 'toolgate-ts-test', version: '1.0.0' }, options);
  const started = performance.now();
  await client.connect(transport);
  const connectMs = performance.now() - started;
  return { client, transport, connectMs, started };
}

function protocolOf(transport) {
  return transport.agreedProtocolVersion ?? null;
}

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

const scenarios = {
  /** Connect, list every page, call echo. */
  async connect_list_call() {
    const { client, transport, connectMs, started } = await connect();
    let readyMs;
    const names = [];
    let cursor;
    let pages = 0;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      names.push(...page.tools.map((t) => t.name));
      // Connected and the first page of tools in hand: when an agent can start.
      readyMs ??= performance.now() - started;
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);
    const called = await client.callTool({ name: 'echo', arguments: { text: 'from typescript' } });
    const out = {
      protocol: protocolOf(transport),
      connect_ms: Math.round(connectMs),
      ready_ms: Math.round(readyMs),
      tools: names,
      pages,
      echo: textOf(called),
      is_error: called.isError ?? false,
    };
    await client.close();
    return out;
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}; known: ${Object.keys(scenarios).join(', ')}`);
  process.exit(2);
}
const timer = setTimeout(() => {
  console.error(`scenario ${scenario} did not end within 120 s`);
  process.exit(3);
}, 120_000);
try {
  const out = await run();
  console.log(JSON.stringify(out));
  clearTimeout(timer);
  process.exit(0);
} catch (e) {
  console.error(e?.stack ?? String(e));
  process.exit(1);
}
