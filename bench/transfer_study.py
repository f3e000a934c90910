#!/usr/bin/env python3
"""Transfer (issue 15): a model trained with softmax attention, its attention
swapped for FAVOR+ and FAVOR++ without fine-tuning, served by favor-server.

    bench/transfer_study.py --server build/server/favor-server \
        --data build/train-default/data --model build/transfer/softmax

(`make transfer-study` trains the softmax model with
`tools/train_default/train.py --kernel softmax` and runs exactly this.) For
every variant (softmax itself; FAVOR+ and FAVOR++ at m = 64 and 256, each
with orthogonal and with simplex features; then at m = 1024, and with the
stabilising ε = 0 at m = 256 and 1024, to tell the feature count and ε
apart) the same weights are served with only config.json's `attention`
changed, and the first --pairs held-out
Debian description pairs are embedded: short descriptions as queries, long
ones as documents. Prints, per variant, the cosine similarity of its
embeddings to the softmax model's (mean and 5th percentile, over queries
and documents) and recall@1 / recall@10 / MRR of the queries against the
documents, as a Markdown table.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import torch

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_ROOT, "tools", "train_default"))
sys.path.insert(0, os.path.join(_ROOT, "bench"))
import data  # noqa: E402
import serving  # noqa: E402
from retrieval_bench import metrics  # noqa: E402

EPSILON = 1e-4  # the server's default feature_epsilon
# (kernel, m, projection, ε): the grid, then what separates the
# swapped models from softmax: more features, and ε = 0.
VARIANTS = [("softmax", None, None, None)] + [
    (kernel, m, projection, EPSILON)
    for m in (64, 256)
    for kernel in ("favor+", "favor++")
    for projection in ("orthogonal", "simplex")] + [
    (kernel, 1024, "orthogonal", EPSILON) for kernel in ("favor+", "favor++")] + [
    (kernel, m, "orthogonal", 0.0) for m in (256, 1024)
    for kernel in ("favor+", "favor++")]


def variant_dir(model_dir, kernel, m, projection, epsilon, parent):
    """A copy of model_dir whose attention is `kernel` with m features."""
    out = os.path.join(parent, f"{kernel}-{m}-{projection}-{epsilon}".replace("+", "p"))
    shutil.copytree(model_dir, out)
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    config["attention"]["kernel"] = kernel
    if m is not None:
        config["attention"]["num_random_features"] = m
        config["attention"]["simplex"] = projection == "simplex"
        config["attention"]["feature_epsilon"] = epsilon
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return out


def run(args):
    rows = data.read(os.path.join(args.data, "debian_test.jsonl"))[:args.pairs]
    queries = [r["query"] for r in rows]
    documents = [r["doc"] for r in rows]
    relevant = list(range(len(rows)))
    results, reference = [], None
    parent = tempfile.mkdtemp(prefix="favor_transfer_")
    try:
        for kernel, m, projection, epsilon in VARIANTS:
            directory = variant_dir(args.model, kernel, m, projection, epsilon,
                                    parent)
            with serving.Server(args.server, directory) as server:
                q, d = server.embed(queries), server.embed(documents)
            vectors = torch.cat([q, d])
            if reference is None:
                reference = vectors
            cosine = (vectors * reference).sum(-1)
            row = {"kernel": kernel, "m": m, "projection": projection,
                   "epsilon": epsilon,
                   "cosine_mean": cosine.mean().item(),
                   "cosine_p5": torch.quantile(cosine, 0.05).item()}
            row.update(metrics(q @ d.T, relevant))
            results.append(row)
            print(f"{kernel} m={m} {projection} eps={epsilon}: "
                  f"recall@1 {row['recall@1']:.3f}", file=sys.stderr)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    print(f"{len(rows)} held-out Debian description pairs "
          f"(short -> long), model {args.model}\n")
    print("| attention | m | features | ε | cosine to softmax (mean / 5th pct) "
          "| recall@1 | recall@10 | MRR |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in results:
        epsilon = "" if r["epsilon"] is None else f"{r['epsilon']:g}"
        print(f"| {r['kernel']} | {r['m'] or ''} | {r['projection'] or ''} | {epsilon} | "
              f"{r['cosine_mean']:.3f} / {r['cosine_p5']:.3f} | "
              f"{r['recall@1']:.3f} | {r['recall@10']:.3f} | {r['mrr']:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--model", required=True,
                        help="a model trained with softmax attention")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--json", help="also write the figures here")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
