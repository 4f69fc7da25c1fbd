#!/usr/bin/env bash
# Installs the npm packages the tests use, each set exactly as its package-lock.json locks it,
# into .tools of the repository (git-ignored):
# - scripts/node -> .tools/node: MCP clients, the Inspector, server-everything, Node 22 itself;
# - scripts/node/oidc -> .tools/node-oidc: the OpenID Connect provider (npm's oidc-provider) the
#   authentication tests run as the authorization server (tests/oidc/provider.mjs).
# Does nothing for a set whose folder already holds exactly that lock: a stamp file keeps the
# hash of the files it was built from. Prints the folder whose node_modules/.bin holds the MCP
# programs (.tools/node) on stdout.
#
#   NODE_TOOLS="$(bash scripts/npm.sh)"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# install SRC DEST: the locked packages of SRC into DEST, unless DEST holds them already.
install() {
    local src="$1" dest="$2"
    local stamp="$dest/.lock.sha256"
    local want
    want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [[ -d "$dest/node_modules" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    command -v npm >/dev/null || { echo "npm: not found; install Node.js (20 or newer) first" >&2; exit 1; }
    local started=$SECONDS
    echo "npm: installing the locked packages of ${src#"$ROOT"/} into $dest" >&2
    mkdir -p "$dest"
    cp "$src/package.json" "$src/package-lock.json" "$dest/"
    # `ci` installs exactly the lock file; no install scripts are needed by these packages.
    (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
    echo "$want" >"$stamp"
    echo "npm: installed in $((SECONDS - started)) s" >&2
}

install "$ROOT/scripts/node" "$ROOT/.tools/node"
install "$ROOT/scripts/node/oidc" "$ROOT/.tools/node-oidc"
echo "$ROOT/.tools/node"
