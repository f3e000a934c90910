#!/usr/bin/python3
"""Exports the encoder of a Favor model folder to ONNX, for ONNX Runtime to
run beside Favor (bench/peer_ort/peer_bench.py):

    export.py [--model build/models/default] [--output build/peers]

writes OUTPUT/favor.onnx (FAVOR+ exactly as favor-server computes it: the
projection drawn from projection_seed + layer, the same stabilisers and
feature_epsilon) and OUTPUT/softmax.onnx (the softmax twin: same shape and
weights, exact attention). The forward is tools/train_default/model.py's,
which tests/model/default_model_test.py holds to favor-server's to 1e-4.

Graph: input `ids` (batch, length) int64, output `embedding` (batch,
hidden) float32: mean-pooled and L2-normalised, what model_bench times
(Model::Embed over token ids returns pooled vectors; pooling is a small
fraction of the work either way). Every sequence of a batch has the same
length, so the graph has no padding mask (see AllKept).

Each export is checked against PyTorch's own forward (model.py's
Encoder.forward, with a real mask) through ONNX Runtime before it is used;
a failed check exits 1.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import warnings

import torch
from torch.nn import functional as F

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "tools", "train_default"))
import model as favor_model  # noqa: E402

OPSET = 14
CHECK_TOLERANCE = 1e-4  # relative max abs error per vector, as the parity
CHECK_SHAPES = ((2, 37), (1, 300))  # batch x length, against PyTorch

# What model.py computes; any other choice in config.json is refused rather
# than exported as something it is not.
_REQUIRED = {"hidden_act": "gelu", "norm": "layer_norm",
             "norm_placement": "post", "position_embedding_type": "rotary",
             "block": "encoder", "pooling": "mean", "normalize": True}
_REQUIRED_ATTENTION = {"kernel": "favor+", "orthogonal": True,
                       "row_norm": "chi"}


def read_safetensors(path):
    """name -> float32 tensor (the header is JSON after its u64 length)."""
    dtypes = {"F32": torch.float32, "F16": torch.float16,
              "BF16": torch.bfloat16}
    with open(path, "rb") as f:
        blob = f.read()
    size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + size])
    header.pop("__metadata__", None)
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        raw = bytearray(blob[8 + size + begin:8 + size + end])
        tensors[name] = torch.frombuffer(raw, dtype=dtypes[entry["dtype"]]) \
            .view(entry["shape"]).float()
    return tensors


def load_encoder(model_dir, kernel):
    """model.py's Encoder with the folder's weights; kernel "favor+" or
    "softmax" (the twin)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    attention = c.get("attention", {})
    wrong = [f"{k}={c.get(k)!r}" for k, v in _REQUIRED.items() if c.get(k) != v]
    wrong += [f"attention.{k}={attention.get(k)!r}"
              for k, v in _REQUIRED_ATTENTION.items() if attention.get(k) != v]
    if wrong:
        sys.exit(f"export.py: {model_dir}: model.py cannot compute "
                 f"{', '.join(wrong)}")
    config = favor_model.Config(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
        num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"],
        layer_norm_eps=c["layer_norm_eps"], rotary_base=c["rotary_base"],
        num_random_features=attention["num_random_features"],
        projection_seed=attention["projection_seed"],
        feature_epsilon=attention["feature_epsilon"], kernel=kernel)
    encoder = favor_model.Encoder(config)
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    encoder.load_state_dict(weights)  # strict: no weight left out or unused
    return encoder.eval()


class AllKept:
    """model.py's `keep` mask for a batch without padding. Every entry is
    true, so its masking steps (masked_fill before the key maximum, the
    product of φ(k) by the mask, masked_fill of the softmax scores) change
    nothing; this stand-in makes them return their input, so that the
    exported graph carries no Where or Mul over L×m (FAVOR+) or L×L (exact)
    elements that would slow ONNX Runtime for nothing. The check against
    Encoder.forward with a real mask shows the graph is unchanged."""

    def __getitem__(self, index):
        return self

    def __invert__(self):
        return self

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") not in ("masked_fill", "mul"):
            raise TypeError(f"AllKept: unexpected {func}")
        return next(a for a in args if isinstance(a, torch.Tensor))


class Exported(torch.nn.Module):
    """Encoder.forward with its mask made AllKept: embeddings, the layers,
    mean over every token, L2 normalisation."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, ids):
        e, c = self.encoder.embeddings, self.encoder.config
        x = e.LayerNorm(e.word_embeddings(ids) + e.token_type_embeddings.weight[0])
        cos, sin = favor_model.rotary_tables(ids.shape[1], c.head_dim,
                                             c.rotary_base)
        for layer in self.encoder.encoder.layer:
            x = layer(x, AllKept(), cos, sin)
        return F.normalize(x.mean(1), dim=-1, eps=1e-12)


def export(encoder, path):
    ids = torch.randint(0, encoder.config.vocab_size, (2, 16))
    # The tracer's warnings (constant head size, shape inference of
    # constants) are about values that are constant in this model.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Exported(encoder), (ids,), path, opset_version=OPSET,
            input_names=["ids"], output_names=["embedding"],
            dynamic_axes={"ids": {0: "batch", 1: "length"},
                          "embedding": {0: "batch"}})


def ort_embed(onnx_path, ids, peers_dir):
    """ONNX Runtime's output for ids (batch, length), through run_ort.mjs."""
    request = json.dumps({"shape": list(ids.shape),
                          "ids": ids.flatten().tolist()})
    answer = subprocess.run(
        ["node", os.path.join(_HERE, "run_ort.mjs"), "--peers", peers_dir,
         "--model", onnx_path, "--eval", "-"],
        input=request, capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        sys.exit(f"export.py: run_ort.mjs failed: {answer.stderr.strip()}")
    out = json.loads(answer.stdout)
    return torch.tensor(out["values"]).view(out["shape"])


def relative_error(got, want):
    """Per vector: max |got - want| / max |want|; the largest over vectors."""
    return ((got - want).abs().amax(-1) / want.abs().amax(-1)).max().item()


def check(encoder, onnx_path, peers_dir):
    """ONNX Runtime against Encoder.forward (a real, all-true mask)."""
    worst = 0.0
    for shape in CHECK_SHAPES:
        ids = torch.randint(0, encoder.config.vocab_size, shape)
        with torch.no_grad():
            want = encoder(ids, torch.ones(shape, dtype=torch.bool))
        worst = max(worst, relative_error(ort_embed(onnx_path, ids, peers_dir),
                                          want))
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="build/models/default")
    parser.add_argument("--output", default="build/peers")
    parser.add_argument("--peers", default=None,
                        help="where setup.sh installed onnxruntime-node "
                             "(default: --output)")
    args = parser.parse_args()
    os.makedirs(args.output, exist_ok=True)
    torch.manual_seed(0)
    failed = False
    for kernel, name in (("favor+", "favor"), ("softmax", "softmax")):
        encoder = load_encoder(args.model, kernel)
        path = os.path.join(args.output, f"{name}.onnx")
        export(encoder, path)
        error = check(encoder, path, args.peers or args.output)
        ok = error <= CHECK_TOLERANCE
        failed |= not ok
        print(f"export.py: {path}: ONNX Runtime against PyTorch, relative "
              f"error {error:.1e} ({'ok' if ok else 'FAILED'}, limit "
              f"{CHECK_TOLERANCE:.0e})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
