"""Random weights for a config, named as docs/models.md names them, the
projections of every attention sublayer (stored in the file, or drawn from
the seed by tests/attention/projection_reference.py, the plain-Python
transcription of the C++ generator, so that no drawn matrix is stored), and
the export through tools/export_state_dict.py.

Every weight is drawn in float64, rounded to float32 (what the file holds)
and kept in float64 for the reference. Norm weights, biases and embeddings
are away from PyTorch's defaults (1 and 0), so that a swapped or ignored
tensor shows in the outputs.
"""

import math
import os
import sys

import torch
from torch import nn

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "attention"))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "..", "tools"))
import export_state_dict  # noqa: E402
import projection_reference  # noqa: E402

from . import attention  # noqa: E402


def float32(t):
    return t.float().double()


class Drawer:
    def __init__(self, config, generator, query_key_scale):
        self.config = config
        self.gen = generator
        self.query_key_scale = query_key_scale
        self.hidden = config["hidden_size"]
        self.weights = {}

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.gen, dtype=torch.float64)

    def put(self, name, tensor):
        self.weights[name] = float32(tensor)

    def norm(self, prefix):
        if self.config.get("norm", "layer_norm") == "layer_norm":
            self.put(prefix + ".weight", 1 + 0.2 * self.randn(self.hidden))
            self.put(prefix + ".bias", 0.2 * self.randn(self.hidden))
        else:  # g near √H, so that the vectors keep their usual size
            self.put(prefix + ".scale",
                     math.sqrt(self.hidden) * (1 + 0.2 * self.randn(1)))

    def linear(self, prefix, out, inputs, scale=1.0):
        self.put(prefix + ".weight",
                 scale * self.randn(out, inputs) / math.sqrt(inputs))
        self.put(prefix + ".bias", scale * 0.2 * self.randn(out))

    def layer(self, prefix):
        h, ffn = self.hidden, self.config["intermediate_size"]
        for part, scale in (("query", self.query_key_scale),
                            ("key", self.query_key_scale), ("value", 1.0)):
            self.linear(f"{prefix}.attention.self.{part}", h, h, scale)
        self.linear(prefix + ".attention.output.dense", h, h)
        self.norm(prefix + ".attention.output.LayerNorm")
        self.linear(prefix + ".intermediate.dense", ffn, h)
        self.linear(prefix + ".output.dense", h, ffn)
        self.norm(prefix + ".output.LayerNorm")

    def embeddings(self):
        c = self.config
        self.put("embeddings.word_embeddings.weight",
                 self.randn(c["vocab_size"], self.hidden))
        if c.get("position_embedding_type", "absolute") == "absolute":
            self.put("embeddings.position_embeddings.weight",
                     self.randn(c["max_position_embeddings"], self.hidden))
        if c.get("type_vocab_size", 2) > 0:
            self.put("embeddings.token_type_embeddings.weight",
                     self.randn(c.get("type_vocab_size", 2), self.hidden))
        self.norm("embeddings.LayerNorm")

    def blocks(self):
        c = self.config
        block = c.get("block", "encoder")
        if block == "cross_attention":
            self.put("encoder.latents", self.randn(c["num_latents"], self.hidden))
        for n in range(c["num_hidden_layers"]):
            if block == "isab":
                self.put(f"encoder.layer.{n}.inducing_points",
                         self.randn(c["num_inducing_points"], self.hidden))
                self.layer(f"encoder.layer.{n}.induced")
            self.layer(f"encoder.layer.{n}")
        if c.get("norm_placement", "post") == "pre":
            self.norm("encoder.final_norm")
        self.put("pooler.query", self.randn(self.hidden))


def sublayer_prefixes(config):
    """The attention sublayers' layer prefixes in forward order."""
    layers = [f"encoder.layer.{n}" for n in range(config["num_hidden_layers"])]
    if config.get("block", "encoder") != "isab":
        return layers
    return [p for n in layers for p in (n + ".induced", n)]


def drawn_projection(config, sublayer):
    """DrawProjection with seed projection_seed + sublayer, draw index 0."""
    attn = config.get("attention", {})
    m = attn.get("num_random_features", 256)
    d = config["hidden_size"] // config["num_attention_heads"]
    coupling = ("iid" if not attn.get("orthogonal", True) else
                "simplex" if attn.get("simplex", False) else "orthogonal")
    values = projection_reference.draw(
        m, d, attn.get("projection_seed", 0) + sublayer, coupling,
        chi=attn.get("row_norm", "chi") == "chi")
    return float32(torch.tensor(values, dtype=torch.float64).reshape(m, d))


def make_model(config, seed, stored_projections, query_key_scale=1.0):
    """(weights by name, with stored projections among them; projections
    by sublayer). `query_key_scale` scales the query and key layers."""
    drawer = Drawer(config, torch.Generator().manual_seed(seed),
                    query_key_scale)
    drawer.embeddings()
    drawer.blocks()
    attn = config.get("attention", {})
    projections = []
    for sublayer, prefix in enumerate(sublayer_prefixes(config)):
        if attn.get("kernel", "favor+") not in attention.PROJECTION_KERNELS:
            projections.append(None)
        elif stored_projections:
            m = attn.get("num_random_features", 256)
            d = config["hidden_size"] // config["num_attention_heads"]
            drawer.put(prefix + ".attention.self.projection", drawer.randn(m, d))
            projections.append(drawer.weights[prefix + ".attention.self.projection"])
        else:
            projections.append(drawn_projection(config, sublayer))
    return drawer.weights, projections


def _copy_in_proj(mha, w, prefix):
    parts = [f"{prefix}.attention.self.{p}" for p in ("query", "key", "value")]
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w[p + ".weight"] for p in parts]))
        mha.in_proj_bias.copy_(torch.cat([w[p + ".bias"] for p in parts]))


def _copy_layer(layer, w, prefix):
    names = {
        "self_attn.out_proj": "attention.output.dense",
        "linear1": "intermediate.dense", "linear2": "output.dense",
        "norm1": "attention.output.LayerNorm", "norm2": "output.LayerNorm",
    }
    with torch.no_grad():
        for torch_name, name in names.items():
            module = layer.get_submodule(torch_name)
            module.weight.copy_(w[f"{prefix}.{name}.weight"])
            module.bias.copy_(w[f"{prefix}.{name}.bias"])
    _copy_in_proj(layer.self_attn, w, prefix)


def multi_head_attention(config, w, prefix):
    """A torch.nn.MultiheadAttention (float64) with a sublayer's weights."""
    mha = nn.MultiheadAttention(config["hidden_size"],
                                config["num_attention_heads"],
                                batch_first=True).double()
    _copy_in_proj(mha, w, prefix)
    with torch.no_grad():
        mha.out_proj.weight.copy_(w[prefix + ".attention.output.dense.weight"])
        mha.out_proj.bias.copy_(w[prefix + ".attention.output.dense.bias"])
    return mha.eval()


def torch_encoder(config, w):
    """PyTorch's own torch.nn.TransformerEncoder (float64, eval) with the
    layers' weights: exact attention, LayerNorm, gelu or relu only."""
    norm_first = config["norm_placement"] == "pre"
    eps = config["layer_norm_eps"]
    layer = nn.TransformerEncoderLayer(
        config["hidden_size"], config["num_attention_heads"],
        config["intermediate_size"], dropout=0.0,
        activation=config["hidden_act"], layer_norm_eps=eps, batch_first=True,
        norm_first=norm_first).double()
    final = (nn.LayerNorm(config["hidden_size"], eps=eps).double()
             if norm_first else None)
    stack = nn.TransformerEncoder(layer, config["num_hidden_layers"], norm=final,
                                  enable_nested_tensor=False)
    for n, torch_layer in enumerate(stack.layers):
        _copy_layer(torch_layer, w, f"encoder.layer.{n}")
    if final is not None:
        with torch.no_grad():
            final.weight.copy_(w["encoder.final_norm.weight"])
            final.bias.copy_(w["encoder.final_norm.bias"])
    return stack.eval()


def export(config, weights, folder, torch_names=False):
    """config.json and model.safetensors (float32) in `folder`. With
    `torch_names` the layers go in as torch_encoder's state dict, under
    PyTorch's names (layers.N.self_attn.in_proj_weight, ...), so that the
    exporter's renaming is part of what the C++ output is compared with."""
    state = dict(weights)
    if torch_names:
        state = {k: v for k, v in weights.items() if not k.startswith("encoder.")}
        for name, tensor in torch_encoder(config, weights).state_dict().items():
            state["encoder." + name] = tensor
    export_state_dict.export({k: v.float() for k, v in state.items()},
                             config, folder)
