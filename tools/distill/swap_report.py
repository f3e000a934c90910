#!/usr/bin/env python3
"""How far a softmax model's attention is from FAVOR+'s, layer by layer:
what swapping the attention alone would change, before distilling.

    tools/distill/swap_report.py --model models/softmax-teacher \
        --favor-model build/server/model/tools/favor-model \
        --data build/train-default/data/debian_train.jsonl --features 256,4096

The model (a Favor folder or a Hugging Face folder that tools/distill
reads) runs with exact attention on --texts texts of --data, each alone and
cut at --max-tokens. At every layer whose attention the swap changes (all
of them but ModernBERT's local ones, which stay exact) the report takes the
queries and keys as they enter the attention (after rotary, where the model
has it) and gives, averaged over the texts:

  q², k²      the mean squared norms of the queries and keys scaled by
              d^-1/4, as FAVOR+ scales them: its estimate of exp(q·k) has a
              relative variance that grows as exp(|q + k|²) / m;
  entropy     of the softmax rows, in nats (log L for uniform attention);
  error       ‖O' − O‖ / ‖O‖ of the layer's attention output O when O' is
              --kernel's output with m random features drawn exactly as
              favor-server draws them (--projection-seed + layer), for each
              m of --features; and, as the yardstick, for O' the values'
              mean (uniform attention: attending to nothing in particular).

Where the FAVOR+ error is near uniform attention's at every m, the swapped
model does not approximate its teacher: it attends almost uniformly, and
distillation must re-learn the attention rather than refine it
(docs/models.md, "Why the swap costs what it does"). Each layer reads the exact
model's inputs, so the errors do not compound.
"""

import argparse
import json
import math
import os
import random
import sys
import types

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import distill  # noqa: E402  (also puts tools/ and tools/train_default/ on the path)
import hf_folder  # noqa: E402
import model as favor_model  # noqa: E402
import tokens  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="model folder (Favor or Hugging Face)")
    p.add_argument("--favor-model", required=True,
                   help="the favor-model binary (tokenises with the model's tokenizer)")
    p.add_argument("--data", required=True,
                   help="texts, as distill.py's --data (a file or `make train-data`'s folder)")
    p.add_argument("--texts", type=int, default=64, help="texts drawn (seeded) from --data")
    p.add_argument("--max-tokens", type=int, default=128, help="tokens a text, at most")
    p.add_argument("--kernel", choices=("favor+", "favor++"), default="favor+")
    p.add_argument("--features", default="256",
                   help="comma-separated m: one error column each")
    p.add_argument("--epsilon", type=float, default=1e-4, help="feature epsilon")
    p.add_argument("--projection-seed", type=int, default=-1,
                   help="default: the model's projection_seed, else 0")
    p.add_argument("--seed", type=int, default=0, help="which texts are drawn")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--json", default="", help="also write the figures here")
    args = p.parse_args(argv)
    args.features = [int(m) for m in args.features.split(",") if m.strip()]
    if not args.features or min(args.features) < 1:
        raise SystemExit("--features: one or more positive counts")
    return args


def exact_encoder(folder):
    """The model with exact attention, whatever its folder names, and its
    attention settings as stored."""
    config = distill.read_config(folder)
    if hf_folder.is_hugging_face(config):
        attention = dict(hf_folder.Folder(folder).overlay.get("attention", {}))
        encoder = hf_folder.load(folder, {
            "kernel": "softmax",
            "num_random_features": attention.get("num_random_features", 256),
            "projection_seed": attention.get("projection_seed", 0),
            "feature_epsilon": attention.get("feature_epsilon", 1e-4)})
    else:
        attention = dict(config.get("attention", {}))
        exact = json.loads(json.dumps(config))
        exact.setdefault("attention", {})["kernel"] = "softmax"
        encoder = distill.load_encoder(folder, exact)
    return encoder.eval(), attention


class Recorder:
    """Stands in for model.attend while the exact model runs: returns the
    exact output, and adds each layer's figures for one text."""

    def __init__(self, args, config, seed):
        self.args, self.config, self.sums = args, config, {}
        self.draws = {m: [] for m in args.features}
        self.head_dim, self.seed = config.head_dim, seed
        self.layers = {}  # the layer's own draw (data pointer) -> its index

    def layer_of(self, w):
        """The index of the layer whose draw `w` is (favor_model.projection
        at the model's settings): ModernBERT's local layers do not attend
        through model.attend, so calls do not count layers."""
        if w.data_ptr() not in self.layers:
            index = next((i for i in range(self.config.num_hidden_layers)
                          if torch.equal(w, favor_model.projection(self.config, i))), None)
            if index is None:
                raise SystemExit("a layer's projection is none of the model's draws")
            self.layers[w.data_ptr()] = index
        return self.layers[w.data_ptr()]

    def projection(self, m, layer):
        draws = self.draws[m]
        while len(draws) <= layer:
            config = types.SimpleNamespace(num_random_features=m, head_dim=self.head_dim,
                                           projection_seed=self.seed)
            draws.append(favor_model.projection(config, len(draws)))
        return draws[layer]

    def __call__(self, config, q, k, v, w, keep):
        layer = self.layer_of(w)
        q, k, v = q.float(), k.float(), v.float()
        d = q.shape[-1]
        qs, ks = q * d ** -0.25, k * d ** -0.25
        kept = keep[:, None, :].float()  # (B, 1, L) over tokens
        count = kept.sum() * q.shape[1]

        def token_mean(x):  # x: (B, H, L)
            return ((x * kept).sum() / count).item()

        scores = (q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(
            ~keep[:, None, None, :], -math.inf)
        p = torch.softmax(scores, -1)
        exact = p @ v  # model.softmax_attention's output, from the same rows
        entropy = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
        norm = exact.norm()
        uniform = (v * keep[:, None, :, None]).sum(-2, keepdim=True) / keep.sum(-1).view(-1, 1, 1, 1)
        row = {"q2": token_mean((qs * qs).sum(-1)), "k2": token_mean((ks * ks).sum(-1)),
               "entropy": token_mean(entropy),
               "uniform": ((uniform.expand_as(exact) - exact).norm() / norm).item()}
        attend = (favor_model.favor_plus_plus if self.args.kernel == "favor++"
                  else favor_model.favor_plus)
        for m in self.args.features:
            approx = attend(q, k, v, self.projection(m, layer), keep, self.args.epsilon)
            row[f"m{m}"] = ((approx - exact).norm() / norm).item()
        sums = self.sums.setdefault(layer, {key: 0.0 for key in row})
        for key, value in row.items():
            sums[key] += value
        return exact


def report(args):
    torch.set_num_threads(args.threads)
    encoder, attention = exact_encoder(args.model)
    seed = args.projection_seed if args.projection_seed >= 0 else attention.get(
        "projection_seed", 0)
    texts = sorted(set(t for t in distill.read_texts(args.data) if t.strip()))
    random.Random(args.seed).shuffle(texts)
    texts = texts[:args.texts]
    ids = [tokens.truncate(r, args.max_tokens)
           for r in tokens.tokenize(args.favor_model, args.model, texts)]
    recorder = Recorder(args, encoder.config, seed)
    stored, favor_model.attend = favor_model.attend, recorder
    try:
        with torch.no_grad():
            for row in ids:
                encoder(torch.tensor([row]), torch.ones(1, len(row), dtype=torch.bool))
    finally:
        favor_model.attend = stored
    layers = [dict({key: value / len(ids) for key, value in sums.items()}, layer=index + 1)
              for index, sums in sorted(recorder.sums.items())]
    return {"model": os.path.abspath(args.model), "kernel": args.kernel,
            "epsilon": args.epsilon, "projection_seed": seed, "texts": len(ids),
            "mean_tokens": sum(len(r) for r in ids) / len(ids),
            "max_tokens": args.max_tokens, "layers": layers}


def table(result, features):
    columns = " | ".join(f"{result['kernel']} m = {m}" for m in features)
    lines = [f"{result['texts']} texts, {result['mean_tokens']:.1f} tokens on average; "
             f"relative error of each layer's attention output against exact attention",
             "",
             f"| layer | q² | k² | entropy (nats) | {columns} | uniform attention |",
             "|---:|---:|---:|---:|" + "---:|" * len(features) + "---:|"]
    for row in result["layers"]:
        errors = " | ".join(f"{row[f'm{m}']:.3f}" for m in features)
        lines.append(f"| {row['layer']} | {row['q2']:.2f} | {row['k2']:.2f} | {row['entropy']:.2f} | "
                     f"{errors} | {row['uniform']:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    result = report(args)
    print(table(result, args.features))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
