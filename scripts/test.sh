#!/usr/bin/env bash
# The whole test suite, from a fresh clone: builds every crate (the plugins and the `toolgate`
# binary that the tests load and drive), installs and starts the S3 test server on 127.0.0.1,
# runs every test, and stops the server. Needs only Rust, Python 3 and the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== build (plugins and the toolgate binary are test inputs)" >&2
cargo build --workspace --locked

echo "== Python test packages (moto, openai, jsonschema, mcp, fastmcp) into .tools/venv" >&2
bash scripts/venv.sh >/dev/null

echo "== npm test packages (MCP Inspector, MCP servers, Node 22 for them) into .tools/node" >&2
bash scripts/npm.sh >/dev/null

echo "== S3 test server" >&2
eval "$(bash scripts/s3-server.sh start)"
trap 'bash scripts/s3-server.sh stop >&2 || true' EXIT

echo "== tests" >&2
cargo test --workspace --locked --no-fail-fast
