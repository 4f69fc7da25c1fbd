#!/usr/bin/env bash
# A real S3 server on 127.0.0.1 for the tests of toolgate-store's S3 backend.
#
#   eval "$(scripts/s3-server.sh start)"   # install if missing, start, create the bucket, print exports
#   scripts/s3-server.sh env                # print the exports of the running server again
#   scripts/s3-server.sh stop               # stop it and remove its state
#
# The server is moto (PyPI `moto`), run as `moto_server`. It is chosen over s3s-fs because it installs in
# well under a minute from PyPI (s3s-fs needs a release build of a large crate on CI's two cores) and
# honours what the store relies on: `If-None-Match: *` on PutObject (create-only saves, answered with
# 412 when the key exists), ranged GETs, prefix listings and bulk DeleteObjects.
# It is installed by scripts/venv.sh into .tools/venv of the repository (git-ignored), pinned, and only when missing.
# Everything it prints on stdout is `export NAME=value` lines; progress goes to stderr.
set -euo pipefail

MOTO_VERSION="5.2.5"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
VENV="$TOOLS/venv"
# Beside the worktree (not in .tools, which worktrees may share): each checkout has its own server.
STATE="$ROOT/target/s3-server"
BUCKET="toolgate-test"
# moto accepts any credentials; real-looking ones make the client sign every request as against AWS.
ACCESS_KEY="toolgate-test-key"
SECRET_KEY="toolgate-test-secret"
REGION="us-east-1"

log() { echo "s3-server: $*" >&2; }

install() {
    # moto and the other test packages live in one venv, installed from scripts/requirements-test.txt.
    bash "$ROOT/scripts/venv.sh" >/dev/null
    if ! "$VENV/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
        log "moto $MOTO_VERSION is not what scripts/requirements-test.txt installed"
        exit 1
    fi
}

free_port() {
    "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

print_env() {
    local port
    port="$(cat "$STATE/port")"
    cat <<EOT
export TOOLGATE_TEST_S3_ENDPOINT=http://127.0.0.1:$port
export TOOLGATE_TEST_S3_BUCKET=$BUCKET
export TOOLGATE_TEST_S3_ACCESS_KEY_ID=$ACCESS_KEY
export TOOLGATE_TEST_S3_SECRET_ACCESS_KEY=$SECRET_KEY
export TOOLGATE_TEST_S3_REGION=$REGION
EOT
}

running() {
    [[ -f "$STATE/pid" ]] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null
}

start() {
    if running; then
        log "already running (pid $(cat "$STATE/pid"))"
        print_env
        return
    fi
    install
    local started=$SECONDS port data
    rm -rf "$STATE"
    mkdir -p "$STATE"
    data="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-s3.XXXXXX")"
    echo "$data" >"$STATE/data"
    port="$(free_port)"
    echo "$port" >"$STATE/port"
    # TMPDIR: moto spools large objects to temporary files; keep them in the server's own directory.
    # Started by a short-lived Python launcher in a session of its own, so that this script has no
    # child to wait for: `eval "$(scripts/s3-server.sh start)"` returns as soon as the server is up.
    "$VENV/bin/python" - "$data" "$port" "$STATE" "$VENV/bin/moto_server" <<'PY'
import os, subprocess, sys
data, port, state, exe = sys.argv[1:5]
log = open(os.path.join(state, "server.log"), "wb")
p = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", port], cwd=data, stdin=subprocess.DEVNULL,
                     stdout=log, stderr=log, start_new_session=True, close_fds=True,
                     env={**os.environ, "TMPDIR": data})
with open(os.path.join(state, "pid"), "w") as f:
    f.write(str(p.pid))
PY
    # Wait until it answers, then create the bucket (an unsigned request is fine for moto).
    "$VENV/bin/python" - "$port" "$BUCKET" <<'PY' || { log "did not come up; log:"; cat "$STATE/server.log" >&2; stop; exit 1; }
import sys, time, urllib.request, urllib.error
port, bucket = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}"
deadline = time.time() + 30
while True:
    try:
        urllib.request.urlopen(base + "/", timeout=1).read()
        break
    except Exception:
        if time.time() > deadline:
            raise SystemExit("no answer within 30 s")
        time.sleep(0.1)
urllib.request.urlopen(urllib.request.Request(f"{base}/{bucket}", method="PUT"), timeout=5).read()
PY
    log "listening on 127.0.0.1:$port, bucket $BUCKET (ready in $((SECONDS - started)) s)"
    print_env
}

stop() {
    if [[ -f "$STATE/pid" ]]; then
        local pid
        pid="$(cat "$STATE/pid")"
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    if [[ -f "$STATE/data" ]]; then
        rm -rf "$(cat "$STATE/data")"
    fi
    rm -rf "$STATE"
    log "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env)
        if running; then print_env; else log "not running; use: eval \"\$($0 start)\""; exit 1; fi ;;
    install) install ;;
    *) echo "usage: $0 start|stop|env|install" >&2; exit 2 ;;
esac
