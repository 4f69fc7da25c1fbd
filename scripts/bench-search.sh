#!/usr/bin/env bash
# Tool search side by side (issue 14): toolgate, bm25s (numba backend) and tantivy on the same
# 100,000-tool catalog and the same 19,514 labelled queries, in one run, printed as a table and as
# ratios (toolgate's figure over the other's: below 1 is toolgate ahead for time and size).
#
#   bash scripts/bench-search.sh [OUT_DIR]
#
# Needs TOOLGATE_DATASETS (the data set directory, as the benches and tests read it) unless the
# data sets are at ../shared/datasets/toolsearch. Installs bm25s, numba and tantivy from PyPI into
# .tools/venv (scripts/requirements-bench.txt; BENCH_VENV names another venv), builds the release
# `toolgate` and the search crate's bench examples, and writes the catalog, the three indexes and
# the figures into OUT_DIR (default: a temporary directory, removed at the end).
#
# Figures: build + write is the time from reading the catalog JSON Lines to the index written
# (toolgate: `toolgate index build`, whole process); peak RSS that of the building process; index
# size the bytes written; query p50/p99 over each query's least time of three runs, top 5, in
# process (toolgate: mapped index, no explanations, as tool_search runs; the others through their
# Python API, which adds the interpreter's cost to each query).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${BENCH_VENV:-$ROOT/.tools/venv}"
REQ="$ROOT/scripts/requirements-bench.txt"
STAMP="$VENV/.bench-requirements.sha256"
export TOOLGATE_DATASETS="${TOOLGATE_DATASETS:-$ROOT/../shared/datasets/toolsearch}"

if [[ $# -ge 1 ]]; then
    OUT="$1"
    mkdir -p "$OUT"
else
    OUT="$(mktemp -d)"
    trap 'rm -rf "$OUT"' EXIT
fi

# The comparison's packages, installed as scripts/venv.sh installs the test packages: once per
# version of the requirements file.
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if ! [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    echo "bench: installing bm25s, numba and tantivy into $VENV" >&2
    mkdir -p "$(dirname "$VENV")"
    [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ" >&2
    echo "$want" >"$STAMP"
fi
PY="$VENV/bin/python"

echo "bench: building toolgate (release)" >&2
cargo build --release --locked -p toolgate-cli >&2
cargo build --release --locked -p toolgate-search --example bench_corpus --example bench_queries >&2
TOOLGATE="$ROOT/target/release/toolgate"
EXAMPLES="$ROOT/target/release/examples"

echo "bench: writing the catalog and queries" >&2
"$EXAMPLES/bench_corpus" "$OUT/corpus" >&2
CATALOG="$OUT/corpus/catalog.jsonl"
QUERIES="$OUT/corpus/queries.jsonl"

# Runs a command under /usr/bin/time; prints "SECONDS PEAK_KIB" of it on stdout.
timed() {
    local t="$OUT/time.txt"
    /usr/bin/time -o "$t" -f "%e %M" "$@" >"$OUT/last.out"
    cat "$t"
}

echo "bench: toolgate" >&2
rm -f "$OUT/toolgate.idx"
read -r tg_build tg_rss < <(timed "$TOOLGATE" -q index build --catalog "$CATALOG" -o "$OUT/toolgate.idx")
tg_size=$(stat -c %s "$OUT/toolgate.idx")
tg_query=$("$EXAMPLES/bench_queries" "$OUT/toolgate.idx" "$QUERIES")

declare -A build rss size query
for engine in bm25s tantivy; do
    echo "bench: $engine" >&2
    rm -rf "${OUT:?}/$engine"
    mkdir -p "$OUT/$engine"
    read -r _ rss[$engine] < <(timed "$PY" scripts/bench_search.py build "$engine" "$CATALOG" "$OUT/$engine")
    build[$engine]=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["build_write_s"])' "$OUT/last.out")
    size[$engine]=$(du -sb "$OUT/$engine" | cut -f1)
    query[$engine]=$("$PY" scripts/bench_search.py query "$engine" "$OUT/$engine" "$QUERIES")
done

"$PY" - "$tg_build" "$tg_rss" "$tg_size" "$tg_query" \
    "${build[bm25s]}" "${rss[bm25s]}" "${size[bm25s]}" "${query[bm25s]}" \
    "${build[tantivy]}" "${rss[tantivy]}" "${size[tantivy]}" "${query[tantivy]}" <<'PYEOF'
import json, sys

a = sys.argv[1:]
names = ["toolgate", "bm25s", "tantivy"]
rows = {}
for i, name in enumerate(names):
    build, rss, size, q = a[4 * i : 4 * i + 4]
    q = json.loads(q)
    rows[name] = {
        "query p50 (us)": q["p50_us"],
        "query p99 (us)": q["p99_us"],
        "index size (MiB)": int(size) / 2**20,
        "build + write (s)": float(build),
        "build peak RSS (MiB)": int(rss) / 1024,
    }
print(f"100,000 tools, {json.loads(a[3])['queries']} queries")
print(f"{'':22}" + "".join(f"{n:>12}" for n in names) + "".join(f"{'tg/' + n:>12}" for n in names[1:]))
for key in rows["toolgate"]:
    vals = [rows[n][key] for n in names]
    line = f"{key:22}" + "".join(f"{v:12.1f}" if v >= 10 else f"{v:12.2f}" for v in vals)
    line += "".join(f"{vals[0] / v:12.2f}" if v else f"{'-':>12}" for v in vals[1:])
    print(line)
PYEOF
