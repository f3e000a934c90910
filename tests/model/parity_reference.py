#!/usr/bin/env python3
"""Reference outputs for the C++ encoder, from an independent implementation.

    parity_reference.py --output DIR

builds small encoders out of PyTorch's own `torch.nn.TransformerEncoderLayer`
with random weights, exports each through tools/export_state_dict.py into
DIR/repository/<case>/, runs every test sequence through it alone (batch of
one, float64, from the exported float32 weights) and writes the outputs to
DIR/expected.json for model_parity_test.cc, which runs the same sequences
packed together through the C++ encoder.

Cases:
  exact_post   exact attention, post-norm LayerNorm, GELU, learned positions:
               the stack exactly as PyTorch computes it.
  favor_post   the same stack with each layer's attention replaced by FAVOR+
               written here from the formulas, with stored projections.
  exact_pre    pre-norm (norm_first=True) with the stack's final norm, ReLU,
               no positions.
"""

import argparse
import json
import math
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import export_state_dict  # noqa: E402

VOCAB, HIDDEN, HEADS, FFN, LAYERS, POSITIONS = 97, 64, 4, 96, 2, 64
FEATURES, EPSILON, NORM_EPS = 32, 1e-4, 1e-5
LENGTHS = [1, 5, 17, 40, 23]


class Embeddings(nn.Module):
    """BERT's embeddings, named as BERT names them."""

    def __init__(self, positions):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        if positions:
            self.position_embeddings = nn.Embedding(POSITIONS, HIDDEN)
        self.token_type_embeddings = nn.Embedding(2, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=NORM_EPS)

    def forward(self, ids):
        x = self.word_embeddings(ids) + self.token_type_embeddings.weight[0]
        if hasattr(self, "position_embeddings"):
            x = x + self.position_embeddings(torch.arange(ids.shape[-1]))
        return self.LayerNorm(x)


class Reference(nn.Module):
    def __init__(self, norm_first, activation, positions):
        super().__init__()
        self.embeddings = Embeddings(positions)
        layer = nn.TransformerEncoderLayer(
            HIDDEN, HEADS, FFN, dropout=0.0, activation=activation,
            layer_norm_eps=NORM_EPS, batch_first=True, norm_first=norm_first)
        final_norm = nn.LayerNorm(HIDDEN, eps=NORM_EPS) if norm_first else None
        self.encoder = nn.TransformerEncoder(layer, LAYERS, norm=final_norm,
                                             enable_nested_tensor=False)
        self.pooler_query = nn.Parameter(torch.randn(HIDDEN))

    def forward(self, ids):
        return self.encoder(self.embeddings(ids[None]))[0]


def favor_plus(q, k, v, projection):
    """FAVOR+ from the formulas (Choromanski et al. 2021), one head.

    φ(x) = m^-1/2 exp(W x' − ‖x'‖²/2) with x' = d^-1/4 x; as in
    server/attention/features.cc, queries are stabilised by their own row
    max, keys by the max over the whole sequence, ε is added to both after
    the shift, and the m^-1/2 cancels in the normalisation.
    """
    scale = q.shape[-1] ** -0.25
    qs, ks = q * scale, k * scale
    uq, uk = qs @ projection.T, ks @ projection.T
    half_q = (qs * qs).sum(-1, keepdim=True) / 2
    half_k = (ks * ks).sum(-1, keepdim=True) / 2
    phi_q = torch.exp(uq - half_q - uq.max(-1, keepdim=True).values) + EPSILON
    phi_k = torch.exp(uk - half_k - uk.max()) + EPSILON
    return (phi_q @ (phi_k.T @ v)) / (phi_q @ phi_k.sum(0))[:, None]


class FavorSelfAttention(nn.Module):
    """Stands in for a layer's nn.MultiheadAttention, with its weights."""

    def __init__(self, mha, projection):
        super().__init__()
        self.mha = mha
        self.projection = projection
        self.batch_first = True

    def forward(self, query, key, value, **unused):
        x = query[0]
        q, k, v = F.linear(x, self.mha.in_proj_weight,
                           self.mha.in_proj_bias).chunk(3, dim=-1)
        d = HIDDEN // HEADS
        heads = [favor_plus(q[:, h * d:(h + 1) * d], k[:, h * d:(h + 1) * d],
                            v[:, h * d:(h + 1) * d], self.projection)
                 for h in range(HEADS)]
        out = F.linear(torch.cat(heads, -1), self.mha.out_proj.weight,
                       self.mha.out_proj.bias)
        return out[None], None


def randomize(model):
    """Weights away from PyTorch's defaults (norms 1 and 0, biases 0), so
    that a swapped or ignored tensor shows in the outputs."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name.lower() and name.endswith("weight"):
                parameter.copy_(1 + 0.2 * torch.randn_like(parameter))
            elif name.endswith("bias"):
                parameter.copy_(0.2 * torch.randn_like(parameter))
            elif "embeddings" in name:
                parameter.copy_(torch.randn_like(parameter))
        # float32 weights, as exported; the reference then runs in float64.
        for parameter in model.parameters():
            parameter.copy_(parameter.float().double())


def state_dict_with_pooler(model, projections):
    state = {k: v for k, v in model.state_dict().items() if k != "pooler_query"}
    state["pooler.query"] = model.pooler_query.detach()
    for layer, projection in enumerate(projections):
        state[f"encoder.layer.{layer}.attention.self.projection"] = projection
    return {k: v.float() for k, v in state.items()}


def config_for(name, norm_first, activation, positions):
    config = {
        "version": f"parity-{name}", "num_attention_heads": HEADS,
        "hidden_act": activation, "layer_norm_eps": NORM_EPS,
        "norm_placement": "pre" if norm_first else "post",
        "position_embedding_type": "absolute" if positions else "none",
        "max_sequence_length": POSITIONS,
        "attention": {"kernel": "softmax"},
        "pooling": "mean", "normalize": False,
    }
    if name.startswith("favor"):
        config["attention"] = {"kernel": "favor+", "num_random_features": FEATURES,
                               "feature_epsilon": EPSILON}
    return config


def pooled(outputs, query):
    """Every pooling of docs/models.md, per sequence."""
    result = {"mean": [], "cls": [], "attention": [], "mean_normalized": []}
    for y in outputs:
        mean = y.mean(0)
        weights = torch.softmax(y @ query / math.sqrt(HIDDEN), 0)
        result["mean"].append(mean.tolist())
        result["cls"].append(y[0].tolist())
        result["attention"].append((weights @ y).tolist())
        result["mean_normalized"].append((mean / mean.norm().clamp_min(1e-12)).tolist())
    return result


def run_case(name, norm_first, activation, positions, sequences, output):
    model = Reference(norm_first, activation, positions).double()
    randomize(model)
    layers = model.encoder.layers
    projections = []
    if name.startswith("favor"):
        d = HIDDEN // HEADS
        projections = [torch.randn(FEATURES, d).double() for _ in layers]
    export_state_dict.export(
        state_dict_with_pooler(model, projections),
        config_for(name, norm_first, activation, positions),
        os.path.join(output, "repository", name))
    for layer, projection in zip(layers, projections):
        layer.self_attn = FavorSelfAttention(layer.self_attn, projection)
    # Training mode keeps PyTorch off its fused fast path, which would
    # bypass the FAVOR+ stand-in; dropout is 0, so nothing else changes.
    model.train(bool(projections))
    with torch.no_grad():
        outputs = [model(torch.tensor(ids)) for ids in sequences]
    case = {"model": name, "tokens": [y.tolist() for y in outputs]}
    case.update(pooled(outputs, model.pooler_query.detach()))
    return case


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    torch.manual_seed(20240501)
    sequences = [torch.randint(0, VOCAB, (n,)).tolist() for n in LENGTHS]
    cases = {
        "exact_post": run_case("exact_post", False, "gelu", True, sequences, args.output),
        "favor_post": run_case("favor_post", False, "gelu", True, sequences, args.output),
        "exact_pre": run_case("exact_pre", True, "relu", False, sequences, args.output),
    }
    offsets = [0]
    for ids in sequences:
        offsets.append(offsets[-1] + len(ids))
    expected = {"token_ids": [t for ids in sequences for t in ids],
                "offsets": offsets, "cases": cases}
    with open(os.path.join(args.output, "expected.json"), "w") as out:
        json.dump(expected, out)
    print(f"wrote {len(cases)} cases to {args.output}")


if __name__ == "__main__":
    main()
