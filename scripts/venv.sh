#!/usr/bin/env bash
# Installs the Python packages the tests use (scripts/requirements-test.txt) into .tools/venv of the
# repository (git-ignored). Does nothing when the venv already holds exactly that list: a stamp file
# keeps the hash of the requirements it was built from. Prints the venv's python on stdout.
#
#   PY="$(bash scripts/venv.sh)"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.tools/venv"
REQ="$ROOT/scripts/requirements-test.txt"
STAMP="$VENV/.requirements.sha256"

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    echo "$VENV/bin/python"
    exit 0
fi

started=$SECONDS
echo "venv: installing $(grep -cvE '^\s*(#|$)' "$REQ") packages into $VENV" >&2
mkdir -p "$ROOT/.tools"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ" >&2
echo "$want" >"$STAMP"
echo "venv: installed in $((SECONDS - started)) s" >&2
echo "$VENV/bin/python"
