#!/usr/bin/env bash
# The checks reviewers would otherwise make by hand, as gates: formatting, clippy with every
# warning an error (the workspace's [workspace.lints] add `undocumented_unsafe_blocks`: every
# `unsafe` block says why it is sound), and the libraries' documentation with broken or private
# intra-doc links as errors. `scripts/test.sh` runs it after the build; run it alone before a
# commit:
#
#   bash scripts/lint.sh
#
# Not documented here: the `toolgate` program (its documentation is `--help` and the manual
# pages it generates; rustdoc would also write its pages over the engine library's, which has
# the same name, cargo#6313) and `plugins/abi-v1`, the first ABI's SDK kept verbatim.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check" >&2
cargo fmt --all --check

echo "== cargo clippy (warnings are errors)" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo doc (warnings, broken intra-doc links included, are errors)" >&2
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked \
    --exclude toolgate-cli --exclude toolgate-plugin-api-v1
