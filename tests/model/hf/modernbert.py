"""ModernBertModel in float64, transcribed from Hugging Face transformers'
modeling_modernbert.py (ModernBertEmbeddings, ModernBertEncoderLayer,
ModernBertAttention with the eager/sdpa path's sliding-window mask,
ModernBertMLP, ModernBertRotaryEmbedding) and configuration_modernbert.py
(layer types from global_attn_every_n_layers; rope thetas from
rope_parameters or global_rope_theta / local_rope_theta). One sequence at a
time, no padding.

With `overlay` (favor.json) choosing a linear kernel, the global layers
attend with it (tests/model/parity/attention.py, projections drawn from the
seed as the server draws them, sublayer = layer index) and the local layers
stay exact inside their window.
"""

import torch
import torch.nn.functional as F

from parity import attention as favor_attention
from parity import weights as favor_weights


def linear(w, prefix, x):
    return F.linear(x, w[prefix + ".weight"], w.get(prefix + ".bias"))


def layer_norm(w, prefix, x, eps):
    return F.layer_norm(x, (x.shape[-1],), w[prefix + ".weight"],
                        w.get(prefix + ".bias"), eps)


def activation(name, x):
    if name == "gelu":
        return F.gelu(x)
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return F.gelu(x, approximate="tanh")
    if name in ("silu", "swish"):
        return F.silu(x)
    raise ValueError(name)


def is_global(config, layer):
    types = config.get("layer_types")
    if types:
        return types[layer] == "full_attention"
    return layer % config.get("global_attn_every_n_layers", 3) == 0


def rope_theta(config, layer_type, legacy, fallback):
    params = (config.get("rope_parameters") or {}).get(layer_type) or {}
    return params.get("rope_theta", config.get(legacy, fallback))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary(x, base):
    """x: (heads, n, d); positions 0 … n−1."""
    _, n, d = x.shape
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def attention(w, config, layer, prefix, x, overlay):
    heads = config["num_attention_heads"]
    n, hidden = x.shape
    d = hidden // heads
    qkv = linear(w, prefix + ".Wqkv", x).view(n, 3, heads, d)
    q, k, v = (qkv[:, i].transpose(0, 1) for i in range(3))  # (heads, n, d)
    if is_global(config, layer):
        base = rope_theta(config, "full_attention", "global_rope_theta", 160000.0)
    else:
        base = rope_theta(config, "sliding_attention", "local_rope_theta", 10000.0)
    q, k = rotary(q, base), rotary(k, base)
    kernel = overlay.get("attention", {}).get("kernel", "softmax")
    if is_global(config, layer) and kernel != "softmax":
        favor_config = dict(overlay, hidden_size=hidden, num_attention_heads=heads)
        projection = favor_weights.drawn_projection(favor_config, layer)
        out = favor_attention.attend(
            kernel, q, k, v, projection, False,
            overlay["attention"].get("feature_epsilon", 1e-4))
        return linear(w, prefix + ".Wo", out.transpose(0, 1).reshape(n, hidden))
    scores = q @ k.transpose(-1, -2) * d ** -0.5
    if not is_global(config, layer):
        rows = torch.arange(n)
        distance = (rows.view(-1, 1) - rows.view(1, -1)).abs()
        scores = scores.masked_fill(distance > config["local_attention"] // 2,
                                    float("-inf"))
    out = (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(n, hidden)
    return linear(w, prefix + ".Wo", out)


def mlp(w, config, prefix, x):
    inner, gate = linear(w, prefix + ".Wi", x).chunk(2, dim=-1)
    return linear(w, prefix + ".Wo",
                  activation(config.get("hidden_activation", "gelu"), inner) * gate)


def forward(w, config, ids, overlay=None):
    eps = config.get("norm_eps", 1e-5)
    x = layer_norm(w, "embeddings.norm", w["embeddings.tok_embeddings.weight"][ids],
                   eps)
    for i in range(config["num_hidden_layers"]):
        p = f"layers.{i}"
        normed = x if i == 0 else layer_norm(w, p + ".attn_norm", x, eps)
        x = x + attention(w, config, i, p + ".attn", normed, overlay or {})
        x = x + mlp(w, config, p + ".mlp", layer_norm(w, p + ".mlp_norm", x, eps))
    return layer_norm(w, "final_norm", x, eps)


def weight_shapes(config):
    h = config["hidden_size"]
    inner = config["intermediate_size"]
    norm_bias = config.get("norm_bias", False)
    linear_bias = config.get("attention_bias", False)

    def norm(name, shapes):
        shapes[name + ".weight"] = (h,)
        if norm_bias:
            shapes[name + ".bias"] = (h,)

    def dense(name, out, in_, shapes):
        shapes[name + ".weight"] = (out, in_)
        if linear_bias:
            shapes[name + ".bias"] = (out,)

    shapes = {"embeddings.tok_embeddings.weight": (config["vocab_size"], h)}
    norm("embeddings.norm", shapes)
    for i in range(config["num_hidden_layers"]):
        p = f"layers.{i}"
        if i > 0:
            norm(p + ".attn_norm", shapes)
        dense(p + ".attn.Wqkv", 3 * h, h, shapes)
        dense(p + ".attn.Wo", h, h, shapes)
        norm(p + ".mlp_norm", shapes)
        dense(p + ".mlp.Wi", 2 * inner, h, shapes)
        dense(p + ".mlp.Wo", h, inner, shapes)
    norm("final_norm", shapes)
    return shapes
