#!/usr/bin/env bash
# What a client behind toolgate sees of an MCP server, beside FastMCP's proxy (issue 26): builds
# toolgate, installs the Python and npm packages, and prints the Markdown table of
# scripts/mcp_compare.py (one row a feature, each cell measured with the real Python client).
#
#   bash scripts/mcp-compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked -p toolgate-cli >&2
PY="$(bash scripts/venv.sh)"
bash scripts/npm.sh >/dev/null
exec "$PY" scripts/mcp_compare.py --toolgate target/debug/toolgate "$@"
