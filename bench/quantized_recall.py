#!/usr/bin/env python3
"""How much of the float ranking the quantised embedding types keep, on the
default model's held-out retrieval sets (docs/http.md, "Embedding types").

    bench/quantized_recall.py --server build/server/favor-server \
        --data build/train-default/data --model build/models/default

favor-server serves the model; every query and document is embedded once
through POST /v1/embeddings with "embedding_types": ["float", "int8",
"uint8", "ubinary"]. For each query the documents are ranked four ways:

  float    cosine (the vectors are unit length: dot product)
  int8     dot product of the int8 values
  uint8    dot product of (value - 127.5)
  binary   Hamming distance of the sign bits (binary and ubinary hold the
           same bits, so they rank alike)

and the figures are, per set and type: overlap@10, the share of the float
ranking's first ten documents that the type's first ten also hold
(recall@10 against float), and recall@10 of the relevant document (the
task's own figure, float's beside it). Sets as bench/retrieval_bench.py
reads them (tools/train_default/data.py): debian, wordnet_example,
wordnet_lemma (the first --limit pairs of each). Prints a Markdown table.
"""

import argparse
import json
import os
import sys
import time
import urllib.request

import torch

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_ROOT, "tools", "train_default"))
import data  # noqa: E402
import serving  # noqa: E402

TYPES = ["float", "int8", "uint8", "ubinary"]


def load_set(data_dir, name, limit):
    rows = data.read(os.path.join(data_dir, f"{name}_test.jsonl"))[:limit]
    documents, index = [], {}
    for r in rows:  # one document per distinct text (WordNet repeats)
        if r["doc"] not in index:
            index[r["doc"]] = len(documents)
            documents.append(r["doc"])
    return [r["query"] for r in rows], documents, [index[r["doc"]] for r in rows]


def embed(port, texts, batch=64):
    """{type: tensor (len(texts), ...)}: float as float64, the others as
    int64 values."""
    out = {t: [] for t in TYPES}
    for start in range(0, len(texts), batch):
        body = json.dumps({"model": "default", "input": texts[start:start + batch],
                           "embedding_types": TYPES}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/embeddings", body,
            {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as answer:
            for item in json.load(answer)["data"]:
                for t in TYPES:
                    out[t].append(item["embeddings"][t])
    return {t: torch.tensor(v, dtype=torch.float64 if t == "float" else torch.int64)
            for t, v in out.items()}


def bits(ubinary):
    """(n, bytes) of 0..255 -> (n, bytes * 8) of 0/1, most significant first."""
    shifts = torch.arange(7, -1, -1)
    return ((ubinary[:, :, None] >> shifts) & 1).reshape(ubinary.shape[0], -1)


def scores(kind, q, d):
    if kind == "float":
        return q["float"] @ d["float"].T
    if kind == "int8":
        return (q["int8"] @ d["int8"].T).double()
    if kind == "uint8":
        return (q["uint8"].double() - 127.5) @ (d["uint8"].double() - 127.5).T
    qb, db = bits(q["ubinary"]).double(), bits(d["ubinary"]).double()
    # -Hamming = matches - size: (q·d) + ((1-q)·(1-d)) - size
    return qb @ db.T + (1 - qb) @ (1 - db).T - qb.shape[1]


def top10(s):
    return s.topk(min(10, s.shape[1]), dim=1).indices


def recall_relevant(s, relevant):
    target = s[torch.arange(len(relevant)), torch.tensor(relevant)]
    rank = (s >= target[:, None]).sum(-1) - 1  # ties count against it, as
    # in bench/retrieval_bench.py
    return (rank < 10).double().mean().item()


def overlap(reference, s):
    a, b = top10(reference), top10(s)
    hits = (a[:, :, None] == b[:, None, :]).any(-1).sum(-1).double()
    return (hits / a.shape[1]).mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    results = {}
    with serving.Server(args.server, args.model) as server:
        server.embed(["warm up"])  # waits for the server to answer
        for name in ("debian", "wordnet_example", "wordnet_lemma"):
            start = time.time()
            queries, documents, relevant = load_set(args.data, name, args.limit)
            q, d = embed(server.port, queries), embed(server.port, documents)
            reference = scores("float", q, d)
            for kind in ("float", "int8", "uint8", "binary"):
                s = reference if kind == "float" else scores(kind, q, d)
                results[(name, kind)] = {
                    "queries": len(queries), "documents": len(documents),
                    "overlap@10": overlap(reference, s),
                    "recall@10": recall_relevant(s, relevant)}
            print(f"{name}: {len(queries)} queries, {len(documents)} documents "
                  f"in {time.time() - start:.0f} s", file=sys.stderr)
    print("| set | queries | documents | type | recall@10 vs float | "
          "recall@10 (relevant) |")
    print("|---|---:|---:|---|---:|---:|")
    for (name, kind), m in results.items():
        print(f"| {name} | {m['queries']} | {m['documents']} | {kind} | "
              f"{m['overlap@10']:.3f} | {m['recall@10']:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{n}/{k}": m for (n, k), m in results.items()}, f, indent=2)


if __name__ == "__main__":
    main()
