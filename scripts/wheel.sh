#!/usr/bin/env bash
# Builds the pip wheel of the `toolgate` program with maturin (pyproject.toml: binary bindings,
# the built-in plugins on) into target/wheels, offline: the crates come from cargo's cache, as
# in the rest of the build. maturin is taken from the test venv (scripts/requirements-test.txt,
# installed by scripts/venv.sh), or from the Python in $TOOLGATE_WHEEL_PYTHON.
#
# Usage: scripts/wheel.sh [--profile release|dev]   (default: release; the CI test builds dev)
#
# Prints the wheel's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="$2"; shift 2 ;;
        *) echo "scripts/wheel.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
python="${TOOLGATE_WHEEL_PYTHON:-.tools/venv/bin/python}"
"$python" -m maturin --version >/dev/null 2>&1 || {
    echo "scripts/wheel.sh: no maturin in $python: run \`bash scripts/venv.sh\` first" >&2
    exit 1
}
out=target/wheels
rm -f "$out"/toolgate-*.whl
"$python" -m maturin build --profile "$profile" --locked --offline --out "$out" >&2
ls "$out"/toolgate-*.whl
