#!/usr/bin/env bash
# A real Redis server on 127.0.0.1 for the tests of shared rate limits (`limits.redis`).
#
#   eval "$(scripts/redis.sh start)"   # install if missing, start, print exports
#   scripts/redis.sh env                # print the exports of the running server again
#   scripts/redis.sh stop               # stop it and remove its state
#   scripts/redis.sh install            # only make sure redis-server is installed
#
# The server is Debian's `redis-server`, installed with apt-get when missing. It runs on a free
# loopback port, in a temporary directory, without persistence. Everything printed on stdout is
# `export NAME=value` lines; progress goes to stderr.
#
# TOOLGATE_TEST_REDIS_URL is the shared server, for tests that only use it; tests that stop,
# pause (SIGSTOP) or kill a server start their own from TOOLGATE_TEST_REDIS_SERVER, the
# program's path.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Beside the worktree (not in .tools, which worktrees share): each checkout has its own server.
STATE="$ROOT/target/redis-server"

log() { echo "redis: $*" >&2; }

install() {
    if command -v redis-server >/dev/null 2>&1; then
        return
    fi
    log "installing Debian's redis-server with apt-get"
    if [[ "$(id -u)" != 0 ]]; then
        log "redis-server is missing and this is not root: install the redis-server package"
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends redis-server >&2
    # The package starts a system service on 6379; the tests use servers of their own.
    if command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now redis-server >/dev/null 2>&1 || true
    fi
    service redis-server stop >/dev/null 2>&1 || true
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

print_env() {
    cat <<EOT
export TOOLGATE_TEST_REDIS_URL=redis://127.0.0.1:$(cat "$STATE/port")/
export TOOLGATE_TEST_REDIS_SERVER=$(command -v redis-server)
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
    rm -rf "$STATE"
    mkdir -p "$STATE"
    local port data
    port="$(free_port)"
    data="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-redis.XXXXXX")"
    echo "$port" >"$STATE/port"
    echo "$data" >"$STATE/data"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$data" --save '' --appendonly no \
        --daemonize yes --pidfile "$STATE/pid" --logfile "$STATE/server.log" >&2
    for _ in $(seq 100); do
        if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
            log "listening on 127.0.0.1:$port"
            print_env
            return
        fi
        sleep 0.1
    done
    log "did not come up; log:"
    cat "$STATE/server.log" >&2 || true
    stop
    exit 1
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
