#!/usr/bin/env bash
# A real Prometheus on 127.0.0.1 for the metrics tests (tests/tests/telemetry.rs): it scrapes
# every target a test writes into its targets folder (file-based discovery, one JSON file a
# target, picked up within a second) every second.
#
#   eval "$(scripts/prometheus.sh start)"   # install if missing, start, print exports
#   scripts/prometheus.sh env                # print the exports of the running server again
#   scripts/prometheus.sh stop               # stop it and remove its state
#
# The server is Debian's `prometheus` package, installed with apt-get when the binary is
# missing (the test machines run as root). Everything it prints on stdout is `export NAME=value`
# lines; progress goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$ROOT/.tools/prometheus"

log() { echo "prometheus: $*" >&2; }

install() {
    if command -v prometheus >/dev/null; then
        return
    fi
    log "installing Debian's prometheus package"
    # The package's service is not started here: the tests start their own server.
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends prometheus >&2
    command -v prometheus >/dev/null || { log "apt-get installed no prometheus binary"; exit 1; }
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

print_env() {
    cat <<EOT
export TOOLGATE_TEST_PROMETHEUS_URL=http://127.0.0.1:$(cat "$STATE/port")
export TOOLGATE_TEST_PROMETHEUS_TARGETS=$STATE/targets
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
    local started=$SECONDS port
    rm -rf "$STATE"
    mkdir -p "$STATE/targets" "$STATE/data"
    port="$(free_port)"
    echo "$port" >"$STATE/port"
    cat >"$STATE/prometheus.yml" <<EOT
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: toolgate
    file_sd_configs:
      - files: ["$STATE/targets/*.json"]
        refresh_interval: 1s
EOT
    # In a session of its own, so that this script has no child to wait for.
    setsid prometheus \
        --config.file="$STATE/prometheus.yml" \
        --storage.tsdb.path="$STATE/data" \
        --web.listen-address="127.0.0.1:$port" \
        --log.level=warn \
        </dev/null >"$STATE/server.log" 2>&1 &
    echo $! >"$STATE/pid"
    local deadline=$((SECONDS + 60))
    until curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; do
        if ! running || ((SECONDS > deadline)); then
            log "did not come up; log:"
            cat "$STATE/server.log" >&2
            stop
            exit 1
        fi
        sleep 0.2
    done
    log "listening on 127.0.0.1:$port (ready in $((SECONDS - started)) s)"
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
