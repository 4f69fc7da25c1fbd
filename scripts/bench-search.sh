#!/usr/bin/env bash
# Tool search side by side (issues 14, 29): toolgate, bm25s (numba backend) and tantivy on the same
# catalogs and the same 19,514 labelled queries, in one run, printed as a table per catalog size and
# as ratios (below 1 is toolgate ahead for time and size). Every engine searches on one thread.
#
#   bash scripts/bench-search.sh [OUT_DIR]
#
# BENCH_SIZES lists the catalog sizes (default "100000 2723": 100,000 tools, and BFCL's 2,723,
# the first tools of the corpus).
#
# Needs TOOLGATE_DATASETS (the data set directory, as the benches and tests read it) unless the
# data sets are at ../shared/datasets/toolsearch. Installs bm25s, numba and tantivy from PyPI into
# .tools/venv (scripts/requirements-bench.txt; BENCH_VENV names another venv), builds the release
# `toolgate` and the search crate's bench examples, and writes the catalog, the three indexes and
# the figures into OUT_DIR (default: a temporary directory, removed at the end).
#
# Figures: build + write is the time from reading the catalog JSON Lines to the index written
# (toolgate: the whole process of `bench_build`, which does what `toolgate index build --catalog`
# does, so that only the search crate is built); peak RSS that of the building process; index
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

echo "bench: building the search crate's bench examples (release)" >&2
cargo build --release --locked -p toolgate-search --example bench_corpus --example bench_build \
    --example bench_queries >&2
EXAMPLES="$ROOT/target/release/examples"

# Runs a command under /usr/bin/time; prints "SECONDS PEAK_KIB" of it on stdout.
timed() {
    local t="$OUT/time.txt"
    /usr/bin/time -o "$t" -f "%e %M" "$@" >"$OUT/last.out"
    cat "$t"
}

# One size: the catalog's first TOOLS tools (BFCL's catalog comes first, so 2723 is BFCL's),
# every engine built and queried, and the table.
bench_size() {
    local tools="$1" dir="$OUT/$1"
    echo "bench: $tools tools: writing the catalog and queries" >&2
    "$EXAMPLES/bench_corpus" "$dir/corpus" "$tools" >&2
    local catalog="$dir/corpus/catalog.jsonl" queries="$dir/corpus/queries.jsonl"

    echo "bench: $tools tools: toolgate" >&2
    local tg_build tg_rss tg_size tg_query
    read -r tg_build tg_rss < <(timed "$EXAMPLES/bench_build" "$catalog" "$dir/toolgate.idx")
    tg_size=$(stat -c %s "$dir/toolgate.idx")
    tg_query=$("$EXAMPLES/bench_queries" "$dir/toolgate.idx" "$queries")

    declare -A build rss size query
    for engine in bm25s tantivy; do
        echo "bench: $tools tools: $engine" >&2
        rm -rf "${dir:?}/$engine"
        mkdir -p "$dir/$engine"
        read -r _ rss[$engine] < <(timed "$PY" scripts/bench_search.py build "$engine" "$catalog" "$dir/$engine")
        build[$engine]=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["build_write_s"])' "$OUT/last.out")
        size[$engine]=$(du -sb "$dir/$engine" | cut -f1)
        query[$engine]=$("$PY" scripts/bench_search.py query "$engine" "$dir/$engine" "$queries")
    done

    "$PY" - "$tools" "$tg_build" "$tg_rss" "$tg_size" "$tg_query" \
        "${build[bm25s]}" "${rss[bm25s]}" "${size[bm25s]}" "${query[bm25s]}" \
        "${build[tantivy]}" "${rss[tantivy]}" "${size[tantivy]}" "${query[tantivy]}" <<'PYEOF'
import json, sys

a = sys.argv[1:]
tools = int(a[0])
tg = {"build": a[1], "rss": a[2], "size": a[3], "q": json.loads(a[4])}
others = {}
for i, name in enumerate(["bm25s", "tantivy"]):
    build, rss, size, q = a[5 + 4 * i : 9 + 4 * i]
    others[name] = {"build": build, "rss": rss, "size": size, "q": json.loads(q)}


def row(build, rss, size, q):
    return {
        "query p50 (us)": q["p50_us"],
        "query p99 (us)": q["p99_us"],
        "index size (MiB)": int(size) / 2**20,
        "build + write (s)": float(build),
        "build peak RSS (MiB)": int(rss) / 1024,
    }


rows = {"toolgate": row(tg["build"], tg["rss"], tg["size"], tg["q"])}
for name, o in others.items():
    rows[name] = row(o["build"], o["rss"], o["size"], o["q"])
names = list(rows)
print(f"{tools:,} tools, {tg['q']['queries']} queries")
ratios = [("toolgate", "bm25s"), ("toolgate", "tantivy")]
print(f"{'':22}" + "".join(f"{n:>13}" for n in names) + "".join(f"{'toolgate/' + b:>17}" for _, b in ratios))
for key in rows["toolgate"]:
    vals = [rows[n][key] for n in names]
    line = f"{key:22}" + "".join(f"{v:13.1f}" if v >= 10 else f"{v:13.2f}" for v in vals)
    for x, y in ratios:
        top, bottom = rows[x][key], rows[y][key]
        line += f"{top / bottom:17.2f}" if bottom else f"{'-':>17}"
    print(line)
print()
PYEOF
}

for tools in ${BENCH_SIZES:-100000 2723}; do
    bench_size "$tools"
done
