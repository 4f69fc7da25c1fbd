"""The other side of scripts/bench-search.sh: bm25s (numba backend) and tantivy on the catalog and
queries toolgate's speed bench uses (written by `cargo run --example bench_corpus`).

  python bench_search.py build ENGINE CATALOG.jsonl OUT_DIR   -> {"build_write_s"}
  python bench_search.py query ENGINE OUT_DIR QUERIES.jsonl  -> {"queries", "p50_us", "p99_us"}

ENGINE is bm25s or tantivy. Both index the same text per tool: the name split into words (at
_ . - and camelCase humps), the description, and each parameter's name and description, with
English stop words removed (and, for tantivy, its English stemmer). A build's time runs from
reading the catalog to the index written; a query's from its text to its top 5 tool numbers, and
each query's least time over three runs is kept (as toolgate's bench_queries does).
"""

import json
import os
import re
import sys
import time

# bm25s wraps every retrieve and tokenize call in a tqdm bar, even with show_progress=False,
# whenever tqdm is importable (the test packages bring it in with huggingface_hub): that doubled
# its time a query at 2,723 tools. DISABLE_TQDM is bm25s's own switch for its no-op stand-in,
# read when bm25s is imported.
os.environ["DISABLE_TQDM"] = "1"

RUNS = 3
TOP_K = 5


def tool_text(tool):
    name = tool.get("name", "")
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    words = re.sub(r"[_.\-]+", " ", words)
    parts = [words, tool.get("description") or ""]

    def walk(schema, depth=0):
        if not isinstance(schema, dict) or depth > 32:
            return
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                parts.append(key.replace("_", " "))
                if isinstance(sub, dict):
                    if isinstance(sub.get("description"), str):
                        parts.append(sub["description"])
                    walk(sub, depth + 1)
        if isinstance(schema.get("items"), dict):
            walk(schema["items"], depth + 1)

    walk(tool.get("parameters") or {})
    return " ".join(parts)


def read_catalog(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_queries(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["query"] for line in f if line.strip()]


def build(engine, catalog, out):
    start = time.perf_counter()
    tools = read_catalog(catalog)
    texts = [tool_text(t) for t in tools]
    if engine == "bm25s":
        import bm25s

        tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
        retriever = bm25s.BM25(backend="numba")
        retriever.index(tokens, show_progress=False)
        retriever.save(out, show_progress=False)
    elif engine == "tantivy":
        import tantivy

        schema = tantivy.SchemaBuilder()
        schema.add_unsigned_field("id", stored=True)
        schema.add_text_field("body", stored=False, tokenizer_name="en_stem")
        schema = schema.build()
        index = tantivy.Index(schema, path=out)
        writer = index.writer(heap_size=256_000_000, num_threads=2)
        for i, text in enumerate(texts):
            writer.add_document(tantivy.Document(id=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
    else:
        raise SystemExit(f"unknown engine {engine}")
    return {"build_write_s": time.perf_counter() - start, "tools": len(tools)}


def percentile(sorted_times, p):
    i = round((len(sorted_times) - 1) * p)
    return sorted_times[i] * 1e6


def query(engine, out, queries_path):
    queries = read_queries(queries_path)
    if engine == "bm25s":
        import bm25s

        retriever = bm25s.BM25.load(out, mmap=False, show_progress=False)
        retriever.backend = "numba"

        def run(q):
            tokens = bm25s.tokenize(q, stopwords="en", show_progress=False, return_ids=False)
            try:
                retriever.retrieve(
                    tokens, k=TOP_K, show_progress=False, n_threads=1, backend_selection="numba"
                )
            except ValueError:
                # No query word is in the vocabulary: no result.
                pass

    elif engine == "tantivy":
        import tantivy

        index = tantivy.Index.open(out)
        searcher = index.searcher()

        def run(q):
            parsed, _errors = index.parse_query_lenient(q, ["body"])
            searcher.search(parsed, TOP_K)

    else:
        raise SystemExit(f"unknown engine {engine}")
    # Warm up (numba compiles on first use).
    for q in queries[:50]:
        run(q)
    least = [float("inf")] * len(queries)
    for _ in range(RUNS):
        for i, q in enumerate(queries):
            start = time.perf_counter()
            run(q)
            least[i] = min(least[i], time.perf_counter() - start)
    least.sort()
    return {
        "queries": len(queries),
        "p50_us": percentile(least, 0.5),
        "p99_us": percentile(least, 0.99),
    }


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("build", "query"):
        raise SystemExit(__doc__)
    _, what, engine, a, b = sys.argv
    result = build(engine, a, b) if what == "build" else query(engine, a, b)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
