#!/usr/bin/env bash
# Installs the npm packages the tests use (scripts/node/package.json, exactly as locked by
# scripts/node/package-lock.json) into .tools/node of the repository (git-ignored). Does nothing
# when .tools/node already holds exactly that lock: a stamp file keeps the hash of the files it
# was built from. Prints the folder whose node_modules/.bin holds the programs on stdout.
#
#   NODE_TOOLS="$(bash scripts/npm.sh)"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/scripts/node"
DEST="$ROOT/.tools/node"
STAMP="$DEST/.lock.sha256"

want="$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ -d "$DEST/node_modules" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    echo "$DEST"
    exit 0
fi

command -v npm >/dev/null || { echo "npm: not found; install Node.js (20 or newer) first" >&2; exit 1; }
started=$SECONDS
echo "npm: installing the locked packages of scripts/node into $DEST" >&2
mkdir -p "$DEST"
cp "$SRC/package.json" "$SRC/package-lock.json" "$DEST/"
# `ci` installs exactly the lock file; no install scripts are needed by these packages.
(cd "$DEST" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
echo "$want" >"$STAMP"
echo "npm: installed in $((SECONDS - started)) s" >&2
echo "$DEST"
