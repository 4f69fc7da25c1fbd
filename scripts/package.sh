#!/usr/bin/env bash
# Packages every crate that is published to crates.io, as `cargo publish` would, in dependency
# order, offline:
#
#   toolgate-policy, toolgate-store, toolgate-search, toolgate-plugin-api,
#   toolgate-plugin-grants                           depend on crates.io only: packaged AND
#                                                    verified (built from the package alone)
#   toolgate-search-semantic, toolgate, toolgate-telemetry,
#   toolgate-mcp, toolgate-plugin-fs, toolgate-plugin-http, toolgate-plugin-sqlite,
#   toolgate-plugin-testkit, toolgate-cli            depend on the crates above, which are not
#                                                    on crates.io yet: packaged with --no-verify
#                                                    (manifest, metadata, files, lockfile)
#
# cargo packages the crates of one invocation in dependency order and resolves their
# dependencies on each other from the packages it just made. Publish in the order above.
# The test crates (toolgate-e2e, the fixtures, the C plugin), the plugin template and the search
# evaluation crate (toolgate-search-eval) are not published. Prints the packages' paths (target/package/*.crate).
set -euo pipefail
cd "$(dirname "$0")/.."

leaves=(toolgate-policy toolgate-store toolgate-search toolgate-plugin-api toolgate-plugin-grants)
dependents=(toolgate-search-semantic toolgate toolgate-telemetry toolgate-mcp toolgate-plugin-fs toolgate-plugin-http toolgate-plugin-sqlite
    toolgate-plugin-testkit toolgate-cli)

args=()
for crate in "${leaves[@]}" "${dependents[@]}"; do args+=(-p "$crate"); done
echo "== cargo package --no-verify: every published crate" >&2
cargo package --locked --offline --allow-dirty --no-verify "${args[@]}" >&2

args=()
for crate in "${leaves[@]}"; do args+=(-p "$crate"); done
echo "== cargo package (verified): the crates whose dependencies are all on crates.io" >&2
cargo package --locked --offline --allow-dirty "${args[@]}" >&2

ls "${CARGO_TARGET_DIR:-target}"/package/*.crate
