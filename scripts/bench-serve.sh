#!/usr/bin/env bash
# The numbers of `toolgate serve` (issue 12): calls/s and p50/p99 latency of an echo tool over
# stdio and Streamable HTTP with 1, 16 and 256 concurrent clients, side by side with a bare rmcp
# server (no guard), FastMCP serving the same tool, and a FastMCP proxy in front of it; then
# the time from a policy write to the new policy serving, over 1,000 reloads under load.
# Prints a Markdown table and writes target/bench-serve.json.
#
#   bash scripts/bench-serve.sh [--seconds 5] [--reloads 1000] [--only "toolgate"]
#
# Everything runs on this machine, on loopback; the load generator is Rust
# (mcp/benches/serve_load.rs) so that the client is not what is measured.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== release build of toolgate and the testkit plugin" >&2
cargo build --release --locked -p toolgate-cli -p toolgate-plugin-testkit >&2
echo "== Python packages (fastmcp) into .tools/venv" >&2
bash scripts/venv.sh >/dev/null
echo "== load" >&2
cargo bench --locked -p toolgate-mcp --bench serve_load -- "$@"
