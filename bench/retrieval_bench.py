#!/usr/bin/env python3
"""Retrieval on the default model's held-out sets: models served by
favor-server against BM25 on the same tokens (docs/models.md, issue 19).

    bench/retrieval_bench.py --server build/server/favor-server \
        --favor-model build/server/model/tools/favor-model \
        --data build/train-default/data \
        --model trained=build/models/default --model random=build/random-models/random

(`make retrieval-bench` runs exactly this once `make train-data` has written
the data.) Each query is embedded by the server (POST /v1/embeddings, text
in), each document too, and the documents ranked by cosine; BM25 (Okapi,
k1 = 1.2, b = 0.75) ranks the same documents by the same WordPiece ids, less
[CLS] and [SEP]. Sets (tools/train_default/data.py, held out by group):

  debian           short description -> long description (first 2,000 pairs)
  wordnet_example  usage example -> its synset's definition
  wordnet_lemma    lemmas -> definition (first 2,000)
  man_long         a manual page's NAME summary -> the page less its NAME
                   section, for pages of 2k to 50k tokens

Prints recall@1, recall@10 and MRR per set and ranker, as a Markdown table.
With `--reference LABEL` (a model given with --model), each model's
embeddings of the set's queries and documents are compared with that
model's, text by text: the table adds the mean and the 5th percentile of
their cosines (issue 37 compares distilled students with their teacher so).
"""

import argparse
import collections
import json
import math
import os
import sys
import time

import torch

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_ROOT, "tools", "train_default"))
import data  # noqa: E402
import serving  # noqa: E402
import tokens  # noqa: E402

SPECIAL = {101, 102}  # [CLS], [SEP]


SETS = (("debian", 2000), ("wordnet_example", None), ("wordnet_lemma", 2000),
        ("man_long", None))


def load_sets(data_dir, favor_model, model_dir, names):
    """{set: (queries, documents, relevant document index per query)}."""
    sets = {}
    for name, limit in [(n, limit) for n, limit in SETS if n in names]:
        rows = data.read(os.path.join(data_dir, f"{name}_test.jsonl"))[:limit]
        documents, index = [], {}
        for r in rows:  # one document per distinct text (WordNet repeats)
            if r["doc"] not in index:
                index[r["doc"]] = len(documents)
                documents.append(r["doc"])
        queries = [r["query"] for r in rows]
        relevant = [index[r["doc"]] for r in rows]
        doc_ids = tokens.tokenize(favor_model, model_dir, documents)
        query_ids = tokens.tokenize(favor_model, model_dir, queries)
        if name == "man_long":  # the long pages only
            keep = [i for i, ids in enumerate(doc_ids) if 2000 <= len(ids) <= 50000]
            renumber = {old: new for new, old in enumerate(keep)}
            chosen = [q for q, rel in enumerate(relevant) if rel in renumber]
            queries = [queries[q] for q in chosen]
            query_ids = [query_ids[q] for q in chosen]
            relevant = [renumber[relevant[q]] for q in chosen]
            documents = [documents[i] for i in keep]
            doc_ids = [doc_ids[i] for i in keep]
        sets[name] = {"queries": queries, "documents": documents,
                      "relevant": relevant, "query_ids": query_ids,
                      "doc_ids": doc_ids}
    return sets


def bm25_scores(query_ids, doc_ids, k1=1.2, b=0.75):
    docs = [collections.Counter(t for t in ids if t not in SPECIAL) for ids in doc_ids]
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / len(lengths)
    frequency = collections.Counter(t for d in docs for t in d)
    n = len(docs)
    postings = collections.defaultdict(list)
    for j, d in enumerate(docs):
        for t, count in d.items():
            weight = count * (k1 + 1) / (count + k1 * (1 - b + b * lengths[j] / average))
            postings[t].append((j, weight))
    scores = torch.zeros(len(query_ids), n, dtype=torch.float64)
    for i, ids in enumerate(query_ids):
        for t in set(ids) - SPECIAL:
            idf = math.log(1 + (n - frequency[t] + 0.5) / (frequency[t] + 0.5))
            for j, weight in postings.get(t, ()):
                scores[i, j] += idf * weight
    return scores


def metrics(scores, relevant):
    """recall@1, recall@10, MRR; ties count against the relevant document."""
    target = scores[torch.arange(len(relevant)), torch.tensor(relevant)]
    rank = (scores >= target[:, None]).sum(-1) - 1  # 0 = first
    return {"recall@1": (rank < 1).double().mean().item(),
            "recall@10": (rank < 10).double().mean().item(),
            "mrr": (1.0 / (rank + 1).double()).mean().item()}


def cosine_to_reference(embeddings, reference):
    """(mean, 5th percentile) of the row-wise cosines of two [n, d] sets."""
    cos = torch.nn.functional.cosine_similarity(embeddings.double(),
                                                reference.double(), dim=-1)
    return cos.mean().item(), torch.quantile(cos, 0.05).item()


def run(args):
    unknown = set(args.sets.split(",")) - {n for n, _ in SETS}
    if unknown:
        sys.exit(f"--sets: no set named {', '.join(sorted(unknown))}")
    labels = [spec.split("=", 1)[0] for spec in args.model]
    if args.reference is not None and args.reference not in labels:
        sys.exit(f"--reference {args.reference}: no --model has that label")
    first_model = args.model[0].split("=", 1)[1]
    sets = load_sets(args.data, args.favor_model, first_model, args.sets.split(","))
    results = collections.OrderedDict()
    embedded = {}  # (set, label) -> queries and documents, one row per text
    for name, s in sets.items():
        start = time.time()
        results[(name, "BM25")] = metrics(bm25_scores(s["query_ids"], s["doc_ids"]),
                                          s["relevant"])
        print(f"{name}: {len(s['queries'])} queries, {len(s['documents'])} "
              f"documents; BM25 in {time.time() - start:.0f} s", file=sys.stderr)
    for spec in args.model:
        label, directory = spec.split("=", 1)
        flags = [f.split("=", 1)[1] for f in args.server_flag
                 if f.split("=", 1)[0] == label]
        with serving.Server(args.server, directory, flags=flags) as server:
            for name, s in sets.items():
                start = time.time()
                q, d = server.embed(s["queries"]), server.embed(s["documents"])
                results[(name, label)] = metrics(q @ d.T, s["relevant"])
                if args.reference is not None:
                    embedded[(name, label)] = torch.cat([q, d])
                print(f"{name}: {label} in {time.time() - start:.0f} s", file=sys.stderr)
    if args.reference is not None:
        for (name, label), e in embedded.items():
            mean, p5 = cosine_to_reference(e, embedded[(name, args.reference)])
            results[(name, label)].update({"cosine_mean": mean, "cosine_p5": p5})
    header = "| set | queries | documents | ranker | recall@1 | recall@10 | MRR |"
    rule = "|---|---:|---:|---|---:|---:|---:|"
    if args.reference is not None:
        header += f" cosine to {args.reference} (mean / 5th pct) |"
        rule += "---:|"
    print(header)
    print(rule)
    for (name, ranker), m in sorted(results.items(), key=lambda kv: list(sets).index(kv[0][0])):
        s = sets[name]
        row = (f"| {name} | {len(s['queries'])} | {len(s['documents'])} | {ranker} | "
               f"{m['recall@1']:.3f} | {m['recall@10']:.3f} | {m['mrr']:.3f} |")
        if args.reference is not None:
            row += (f" {m['cosine_mean']:.4f} / {m['cosine_p5']:.4f} |"
                    if "cosine_mean" in m else " – |")
        print(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{n}/{r}": m for (n, r), m in results.items()}, f, indent=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--favor-model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--model", action="append", required=True,
                        help="LABEL=MODEL_DIR (the first one's tokenizer tokenises for BM25)")
    parser.add_argument("--server-flag", action="append", default=[],
                        help="LABEL=--FLAG=VALUE: a favor-server flag for that "
                             "model's server (e.g. int8=--dtype=int8)")
    parser.add_argument("--sets", default=",".join(n for n, _ in SETS),
                        help="comma-separated held-out sets to run (default: all)")
    parser.add_argument("--reference", metavar="LABEL",
                        help="also report each model's cosine to this model's "
                             "embeddings of the same texts (mean, 5th percentile)")
    parser.add_argument("--json", help="also write the figures here")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
