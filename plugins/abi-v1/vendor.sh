#!/usr/bin/env bash
# Re-creates the snapshot this crate builds: the plugin SDK (plugin-api) and the testkit plugin
# exactly as they were in the commit that introduced plugin ABI version 1. Run from anywhere in
# the repository; the files are written verbatim, then `git diff` must show nothing.
# sdk/src/host.rs is never compiled (sdk/Cargo.toml has no `host` feature); it is kept so that
# rustfmt, which follows every `mod`, finds the file lib.rs names.
set -euo pipefail
commit=422526d
here="$(cd "$(dirname "$0")" && pwd)"
cd "$(git -C "$here" rev-parse --show-toplevel)"
for file in lib.rs abi.rs sdk.rs host.rs; do
    git show "$commit:plugin-api/src/$file" > "$here/sdk/src/$file"
done
git show "$commit:plugins/testkit/src/lib.rs" > "$here/src/lib.rs"
