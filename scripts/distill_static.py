"""Distils a static (model2vec-format) embedding model from a BERT sentence encoder, offline.

With `--sets ""` (what `scripts/model.sh` does by default) the model is a general one, fitted to
no text at all: each token's row is the encoder's vector of the token alone, projected on the
vocabulary's principal components and SIF-weighted (model2vec's recipe). It has seen nothing of
any data set, so every data set is a catalog it never saw. With `--sets A,B` the rows are fitted
as below to the tool texts and fit-part queries of sets A and B only (`model.sh --leave-out X`).

A sentence's vector under a static model is the mean of its tokens' rows: no neural network at
query time. The rows are fitted so that this mean comes close to the encoder's own sentence vector
(mean pooling, normalised, as sentence-transformers computes it), tokenlearn-style:

1. Every vocabulary token is run through the encoder alone ("[CLS] token [SEP]", mean-pooled):
   the prior row of each token, the one kept for a token the training text does not have.
2. The training text is embedded whole by the encoder: the tool texts of the Seal-Tools and
   MetaTool catalogs (as toolgate embeds a tool: its name's words, description and parameters)
   and the queries of the *fit* part of the tune half of all three quality sets
   (`eval::tune_part_of`, a quarter of each set). The tune half's other part (`TunePart::Fuse`)
   is where the fusion with the lexical ranking is chosen: it must stay unseen by the model, or
   the fusion learns to trust a dense ranking that only looks good on queries it was fitted to.
   No held-out query is ever read. Each text is tokenised as toolgate's static model tokenises
   it (stop words and punctuation left out), so the rows learn what toolgate's mean will be made
   of.
3. The rows solve `min sum_texts |mean of the text's rows - encoder vector|^2 + lam |rows -
   prior|^2` (least squares, conjugate gradients on the normal equations), then are projected on
   the 256 principal components of the encoder's vectors of the training text.

Measured (nDCG@5, dense ranking alone, toolgate's centred int8 cosine, fitted on the tune half's
sub-half A and scored on its sub-half B; BFCL / Seal-Tools / MetaTool): the previous distillation
(each token's own output position, PCA 256, SIF 1e-4) 51.1 / 63.5 / 56.5; fitted to the tool texts
alone 51.7 / 61.5 / 55.4; with the tune queries too 53.3 / 63.2 / 65.9; without the BFCL tool
texts (which took 490 of the encoder's 1,100 s here for 0.7 points of BFCL) 52.6 / 62.8 / 66.1;
at 256 dimensions instead of 384 52.1 / 62.5 / 66.1. As now fitted (the fit part), dense on the
fuse part 51.9 / 62.5 / 66.1 (on the fit part it was fitted to 55.0 / 65.8 / 67.2) and held out
50.2 / 62.5 / 65.4, hybrid held out 64.4 / 93.5 / 66.4 with the fusion chosen on the fuse part.
Fitted on the whole tune half (and the fusion chosen on queries the model had seen), held out:
dense 51.1 / 62.2 / 66.8, hybrid 64.5 / 93.4 / 67.1: half the MetaTool queries cost the dense
ranking 1.4 points held out, the price of a fusion tuned on unseen queries. The encoder itself scores 65.8 dense on MetaTool's held-out half with plain
cosines of the descriptions, 63.6 with toolgate's tool text and 58.5 once centred on the mean
tool vector as toolgate does: the encoder gains nothing from centring, the static model needs it.

Cost: the encoder runs over about 430,000 tokens (the vocabulary's 92,000, Seal-Tools' tool texts
220,000, MetaTool's fit-part queries 67,000), against the vocabulary alone before:
`scripts/model.sh` took 330 s on the 2-core test machine at load 2 (fitted to the whole tune half,
952 s at load 5.5; the previous distillation about 150 s at load 3). Cheaper training text lost on the tune half (sub-half B, centred, Seal-Tools / MetaTool): a
quarter of MetaTool's queries 61.5 / 61.7, without Seal-Tools' tool texts too 52.8 / 60.9.

The encoder's forward pass is written here in numpy (BERT: post-norm layers, GELU), so distilling
needs only numpy and safetensors, not torch; the tokenizer is BERT's uncased WordPiece, read from
the encoder's tokenizer.json. Output: DIR/model.safetensors (one tensor, "embeddings": [vocab,
dims] float32), DIR/tokenizer.json (the encoder's) and DIR/config.json, the layout toolgate's
`search.embeddings.model` reads.

    python scripts/distill_static.py ENCODER_DIR OUT_DIR --datasets DIR --stop-words TEXT_RS
        [--dims 256] [--lam 0.1] [--iters 20]
"""


import argparse
import json
import re
import shutil
import sys
import unicodedata
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file


def erf(x):
    # Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class Bert:
    def __init__(self, model_dir: Path):
        self.cfg = json.loads((model_dir / "config.json").read_text())
        self.w = load_file(str(model_dir / "model.safetensors"))
        self.heads = self.cfg["num_attention_heads"]
        self.eps = self.cfg.get("layer_norm_eps", 1e-12)

    def p(self, name):
        for prefix in ("", "bert."):
            if prefix + name in self.w:
                return self.w[prefix + name]
        raise KeyError(name)

    def linear(self, x, name):
        # As a 2-D product: numpy's 3-D @ 2-D matmul does not use BLAS and is 50x slower.
        w = self.p(name + ".weight")
        y = x.reshape(-1, x.shape[-1]) @ w.T + self.p(name + ".bias")
        return y.reshape(*x.shape[:-1], w.shape[0])

    def forward(self, ids):
        """Last hidden states for a batch of equal-length id sequences (no padding)."""
        n, t = ids.shape
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[:t][None]
             + self.p("embeddings.token_type_embeddings.weight")[0][None, None])
        x = layer_norm(x, self.p("embeddings.LayerNorm.weight"), self.p("embeddings.LayerNorm.bias"),
                       self.eps)
        h = self.heads
        d = x.shape[-1] // h
        for i in range(self.cfg["num_hidden_layers"]):
            pre = f"encoder.layer.{i}."
            q = self.linear(x, pre + "attention.self.query").reshape(n, t, h, d).transpose(0, 2, 1, 3)
            k = self.linear(x, pre + "attention.self.key").reshape(n, t, h, d).transpose(0, 2, 1, 3)
            v = self.linear(x, pre + "attention.self.value").reshape(n, t, h, d).transpose(0, 2, 1, 3)
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, t, h * d)
            x = layer_norm(x + self.linear(ctx, pre + "attention.output.dense"),
                           self.p(pre + "attention.output.LayerNorm.weight"),
                           self.p(pre + "attention.output.LayerNorm.bias"), self.eps)
            ff = self.linear(gelu(self.linear(x, pre + "intermediate.dense")), pre + "output.dense")
            x = layer_norm(x + ff, self.p(pre + "output.LayerNorm.weight"),
                           self.p(pre + "output.LayerNorm.bias"), self.eps)
        return x


# ---- Tokenisation: BERT's uncased WordPiece for the encoder, toolgate's reading of it for the
# static model (search/src/semantic/wordpiece.rs: punctuation, stop words and unknown words out).

class WordPiece:
    def __init__(self, tokenizer_json: Path, stop_words: set):
        self.vocab = json.loads(tokenizer_json.read_text())["model"]["vocab"]
        self.stop = stop_words

    @staticmethod
    def words(text):
        """BERT's basic tokenizer: lowercased, accents stripped, split at whitespace and
        punctuation; each mark is returned as ("P", mark)."""
        out, cur = [], []
        text = "".join(c for c in text if c not in "\0\ufffd" and unicodedata.category(c) != "Cc"
                       or c.isspace())
        if not text.isascii():
            text = "".join(c for c in unicodedata.normalize("NFD", text)
                           if not unicodedata.combining(c))
        for c in text.lower():
            cjk = 0x4E00 <= ord(c) <= 0x9FFF or 0x3400 <= ord(c) <= 0x4DBF
            if c.isspace() or cjk or not (c.isalnum() or unicodedata.combining(c)):
                if cur:
                    out.append("".join(cur))
                    cur = []
                if not c.isspace():
                    out.append(c if cjk else ("P", c))
            else:
                cur.append(c)
        if cur:
            out.append("".join(cur))
        return out

    def pieces(self, word):
        """The longest-first WordPiece ids of `word`, or None if it has no full cover."""
        if len(word) > 100:
            return None
        out, start = [], 0
        while start < len(word):
            end = len(word)
            while start < end and ("##" * (start > 0) + word[start:end]) not in self.vocab:
                end -= 1
            if start == end:
                return None
            out.append(self.vocab["##" * (start > 0) + word[start:end]])
            start = end
        return out

    def encoder_ids(self, text, max_len=256):
        unk = self.vocab["[UNK]"]
        ids = []
        for w in self.words(text):
            if isinstance(w, tuple):
                ids.append(self.vocab.get(w[1], unk))
            else:
                ids.extend(self.pieces(w) or [unk])
        return [self.vocab["[CLS]"]] + ids[: max_len - 2] + [self.vocab["[SEP]"]]

    def static_ids(self, text):
        ids = []
        for w in self.words(text):
            if not isinstance(w, tuple) and not (w.isascii() and w in self.stop):
                ids.extend(self.pieces(w) or [])
        return ids


def stop_words(text_rs: Path):
    """toolgate's stop words, read from the one list it keeps (`STOP_WORDS` in search's text.rs)."""
    block = re.search(r"const STOP_WORDS: &\[&str\] = &\[(.*?)\];", text_rs.read_text(), re.S)
    if block is None:
        sys.exit(f"{text_rs}: no STOP_WORDS list")
    return set(re.findall(r'"([^"]+)"', block.group(1)))


# ---- Training text: what toolgate embeds for a tool (search/src/semantic/mod.rs `tool_text`)
# and the tune half's queries (search/src/eval.rs `half_of`).

def name_words(name):
    out = []
    for piece in re.split(r"[^0-9A-Za-z]+", name):
        out += [w.lower() for w in
                re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", piece)]
    return out


def schema_text(schema, out):
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return
    for name in sorted(props):
        prop = props[name]
        out += name_words(name)
        if isinstance(prop, dict):
            if isinstance(prop.get("description"), str):
                out.append(prop["description"])
            schema_text(prop, out)
            schema_text(prop.get("items"), out)


def tool_text(doc):
    out = [" ".join(name_words(doc["name"])) + ". " + (doc.get("description") or "")]
    out += doc.get("keywords") or []
    schema_text(doc.get("parameters"), out)
    return " ".join(out)


def tune_part(query_id):
    """The tune half's part a query is in: "fit", "fuse", or None for a held-out query
    (search/src/eval.rs `tune_part_of`: the FNV-1a hash of the id, lowest bit 0 for the tune
    half, next bit 0 for the fit part). The model toolgate ships is fitted to the fit part; the
    fusion is chosen on the fuse part, which must stay unseen by it. The held-out half is never
    read."""
    h = 0xcbf29ce484222325
    for b in query_id.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return None if h & 1 else ("fuse" if h & 2 else "fit")


def set_dir(name, datasets: Path, local: Path):
    return local / name if local is not None and (local / name).is_dir() else datasets / name


def training_text(datasets: Path, part: str, sets=("bfcl", "sealtools", "metatool"), local=None):
    """The texts the model is fitted to, and the ids of the queries among them by data set (written
    beside the model as `training.json`, which the quality test compares with `tune_part_of`).
    `part` is the tune half's part whose queries are used: "fit" for the model toolgate ships,
    "fuse" for the mirror model the fusion tuning scores the fit part with (`scripts/model.sh
    --mirror`)."""
    texts = []
    # BFCL's tool texts are left out: 490 of the encoder's 1,100 s for 0.7 points of BFCL.
    for name in [s for s in sets if s != "bfcl"]:
        with open(set_dir(name, datasets, local) / "catalog.jsonl") as f:
            texts += [tool_text(json.loads(line)) for line in f if line.strip()]
    ids = {}
    for name in sets:
        with open(set_dir(name, datasets, local) / "queries.jsonl") as f:
            queries = [json.loads(line) for line in f if line.strip()]
        seen = [q for q in queries if tune_part(q["id"]) == part]
        texts += [q["query"] for q in seen]
        ids[name] = sorted(q["id"] for q in seen)
    return texts, ids


# ---- The fit.

def encode(bert, seqs, label):
    """The encoder's mean-pooled, normalised vector of each id sequence (batched by length, so
    no padding is needed)."""
    out = np.zeros((len(seqs), bert.cfg["hidden_size"]), dtype=np.float32)
    by_len = {}
    for i, s in enumerate(seqs):
        by_len.setdefault(len(s), []).append(i)
    done = 0
    for length, idx in sorted(by_len.items()):
        step = max(1, 8192 // length)
        for j in range(0, len(idx), step):
            part = idx[j:j + step]
            out[part] = bert.forward(np.array([seqs[i] for i in part])).mean(1)
            done += len(part)
        print(f"{label}: {done}/{len(seqs)}", file=sys.stderr, flush=True)
    return unit(out)


def unit(x):
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(n > 0, n, 1)


class MeanOfRows:
    """The sparse [texts, vocab] matrix whose product with the rows is each text's mean row."""

    def __init__(self, token_lists, vocab_size):
        lens = np.array([len(t) for t in token_lists])
        self.starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        self.ids = np.concatenate(token_lists).astype(np.int64)
        self.w = np.repeat(1.0 / lens, lens).astype(np.float32)[:, None]
        self.text = np.repeat(np.arange(len(token_lists)), lens)
        self.order = np.argsort(self.ids, kind="stable")
        self.tokens, self.token_starts = np.unique(self.ids[self.order], return_index=True)
        self.vocab_size = vocab_size

    def times(self, rows):
        return np.add.reduceat(rows[self.ids] * self.w, self.starts, axis=0)

    def transposed_times(self, per_text):
        out = np.zeros((self.vocab_size, per_text.shape[1]), dtype=np.float32)
        vals = per_text[self.text[self.order]] * self.w[self.order]
        out[self.tokens] = np.add.reduceat(vals, self.token_starts, axis=0)
        return out


def fit(m, targets, prior, lam, iters):
    """Conjugate gradients on (M'M + lam) X = M'Y + lam P, every column at once."""
    def op(x):
        return m.transposed_times(m.times(x)) + lam * x
    x = prior.copy()
    r = m.transposed_times(targets) + lam * prior - op(x)
    p = r.copy()
    rs = (r * r).sum(0)
    for _ in range(iters):
        ap = op(p)
        a = rs / np.maximum((p * ap).sum(0), 1e-30)
        x += a * p
        r -= a * ap
        rn = (r * r).sum(0)
        p = r + (rn / np.maximum(rs, 1e-30)) * p
        rs = rn
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("encoder", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--datasets", type=Path, required=True,
                    help="toolgate's quality sets (catalogs and queries), the training text")
    ap.add_argument("--stop-words", type=Path, required=True,
                    help="search/src/text.rs, whose STOP_WORDS the static tokenizer leaves out")
    ap.add_argument("--part", choices=("fit", "fuse"), default="fit",
                    help="the tune half's part whose queries the model is fitted to")
    ap.add_argument("--sets", default="bfcl,sealtools,metatool",
                    help="the data sets whose texts the model is fitted to (comma-separated); "
                         "empty: none, a general model of the vocabulary alone")
    ap.add_argument("--local-datasets", type=Path, default=None,
                    help="a second folder of data sets (search-eval/data), searched first")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--sif", type=float, default=1e-4,
                    help="the general model's SIF coefficient (model2vec's default)")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()

    tok = json.loads((args.encoder / "tokenizer.json").read_text())
    if tok["model"]["type"] != "WordPiece":
        sys.exit(f"{args.encoder}: tokenizer model {tok['model']['type']}, expected WordPiece")
    wp = WordPiece(args.encoder / "tokenizer.json", stop_words(args.stop_words))
    cls_id, sep_id = wp.vocab["[CLS]"], wp.vocab["[SEP]"]
    n = max(wp.vocab.values()) + 1
    bert = Bert(args.encoder)

    prior = encode(bert, [[cls_id, i, sep_id] for i in range(n)], "vocabulary")
    sets = [s for s in args.sets.split(",") if s]
    texts, query_ids = training_text(args.datasets, args.part, sets, args.local_datasets)
    texts = [t for t in texts if wp.static_ids(t)]
    if texts:
        targets = encode(bert, [wp.encoder_ids(t) for t in texts], "training text")
        m = MeanOfRows([wp.static_ids(t) for t in texts], n)
        rows = fit(m, targets, prior, args.lam, args.iters)
        basis = targets
        print(f"fitted {len(m.tokens)} of {n} tokens to {len(texts)} texts", file=sys.stderr)
    else:
        # A general model, model2vec's recipe: each token's row is the encoder's vector of the
        # token alone, projected on the principal components of the vocabulary's vectors, then
        # weighted by SIF (sif / (sif + p)) with each token's probability estimated by Zipf's
        # law from its rank in the vocabulary (BERT's vocabulary is in frequency order). It has
        # seen no text of any data set.
        rows = prior
        basis = prior
        print(f"general model: {n} tokens, no training text", file=sys.stderr)
    _, _, vt = np.linalg.svd((basis - basis.mean(0)).astype(np.float64), full_matrices=False)
    emb = (rows @ vt[:args.dims].T.astype(np.float32)).astype(np.float32)
    if not texts:
        inv_rank = 1.0 / np.arange(1, n + 1, dtype=np.float64)
        proba = inv_rank / inv_rank.sum()
        emb *= (args.sif / (args.sif + proba)).astype(np.float32)[:, None]

    args.out.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": np.ascontiguousarray(emb)}, str(args.out / "model.safetensors"))
    shutil.copyfile(args.encoder / "tokenizer.json", args.out / "tokenizer.json")
    (args.out / "config.json").write_text(json.dumps({
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "hidden_dim": args.dims,
        "normalize": True,
        "distilled_from": bert.cfg.get("_name_or_path", str(args.encoder)),
        "fitted_to": f"{len(texts)} texts (the tune half's {args.part}-part queries and tool "
                     f"texts of: {', '.join(sets) or 'no data set'})",
        "lambda": args.lam,
    }, indent=2) + "\n")
    # Which queries the model saw, so that a test can tell none of the held-out half or of the
    # fusion's fuse part was among them (this script's `tune_part` repeats a rule of eval.rs).
    (args.out / "training.json").write_text(json.dumps({
        "part": args.part,
        "tool_texts": [s for s in sets if s != "bfcl"],
        "query_ids": query_ids,
    }, indent=1) + "\n")
    print(f"wrote {args.out} ({n} x {args.dims})", file=sys.stderr)


if __name__ == "__main__":
    main()
