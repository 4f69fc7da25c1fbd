"""Converts Gorilla's APIBench (data/api/*.jsonl and data/apibench/*_eval.json) into toolgate's
quality-set layout: catalog.jsonl (one tool a line: name, description, parameters) and
queries.jsonl (id, query, relevant). See SOURCE.txt beside this file.

    python convert.py GORILLA_DATA_DIR OUT_DIR

GORILLA_DATA_DIR holds huggingface_api.jsonl, tensorflowhub_api.jsonl, torchhub_api.jsonl,
huggingface_eval.json, tensorflow_eval.json and torchhub_eval.json (taken from the repository at
the commit SOURCE.txt names). A tool is one API call (api_call, whitespace and quote style
ignored): entries with the same call are one tool, the first kept. Its name is the hub's model id
with every character toolgate does not allow in a name turned into `_`; its description joins
the entry's description, functionality and domain; its parameters are the entry's
api_arguments when they are named. A query is an eval entry's instruction (the text after
`###Instruction:`), relevant to the tool of its api_call; an eval entry whose call is in no
catalog entry is left out.
"""

import json
import re
import sys
from pathlib import Path

SETS = [("hf", "huggingface"), ("tf", "tensorflowhub"), ("torch", "torchhub")]
EVAL = {"hf": "huggingface_eval.json", "tf": "tensorflow_eval.json", "torch": "torchhub_eval.json"}


def key(call):
    return re.sub(r"\s+", "", str(call)).replace('"', "'")


def name_of(prefix, entry):
    call = str(entry.get("api_call", ""))
    if prefix == "tf":
        m = re.search(r"tfhub\.dev/([^'\"]+)", call)
        ident = m.group(1) if m else entry.get("api_name", "")
    elif prefix == "torch":
        repo = re.search(r"repo_or_dir\s*=\s*'([^']+)'", call) or re.search(r"load\('([^']+)'", call)
        model = re.search(r"model\s*=\s*'([^']+)'", call) or re.search(r"load\('[^']+',\s*'([^']+)'", call)
        ident = "/".join(x.group(1) for x in (repo, model) if x) or entry.get("api_name", "")
    else:
        ident = entry.get("api_name", "")
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(ident)).strip("_")
    return name[:120] or "api"


def params_of(entry):
    args = entry.get("api_arguments")
    props = {}
    if isinstance(args, dict):
        for k, v in args.items():
            props[re.sub(r"[^A-Za-z0-9_]", "_", k)] = {"description": str(v)[:200]}
    elif isinstance(args, list):
        for a in args:
            if isinstance(a, dict) and "name" in a:
                props[re.sub(r"[^A-Za-z0-9_]", "_", str(a["name"]))] = {
                    "description": str(a.get("description", ""))[:200]}
            elif isinstance(a, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", a):
                props[a] = {}
    return {"type": "object", "properties": props}


def main():
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    tools, by_call, names = [], {}, set()
    for prefix, stem in SETS:
        for line in (src / f"{stem}_api.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            e = json.loads(line)
            k = key(e.get("api_call"))
            if k in by_call:
                continue
            base = f"{prefix}.{name_of(prefix, e)}"
            name, n = base, 2
            while name.lower() in names:
                name, n = f"{base}__{n}", n + 1
            names.add(name.lower())
            by_call[k] = name
            desc = " ".join(str(x).strip() for x in (e.get("description"), e.get("functionality"),
                                                      e.get("domain")) if x and str(x).strip() not in ("N/A", ""))
            tools.append({"name": name, "description": desc, "parameters": params_of(e)})
    queries, missed = [], 0
    for prefix, _ in SETS:
        for i, line in enumerate((src / EVAL[prefix]).read_text().splitlines()):
            if not line.strip():
                continue
            e = json.loads(line)
            call = (e.get("api_data") or {}).get("api_call") or e.get("api_call")
            tool = by_call.get(key(call))
            m = re.search(r"###Instruction:\s*(.*?)\s*(?:###Output|$)", e.get("code", ""), re.S)
            if tool is None or not m or not m.group(1).strip():
                missed += 1
                continue
            queries.append({"id": f"{prefix}-{i + 1}", "query": " ".join(m.group(1).split()),
                            "relevant": [tool]})
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "catalog.jsonl", "w") as f:
        for t in tools:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{len(tools)} tools, {len(queries)} queries, {missed} eval entries left out", file=sys.stderr)


if __name__ == "__main__":
    main()
