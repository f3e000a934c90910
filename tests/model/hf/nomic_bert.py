"""NomicBertModel in float64, transcribed from nomic-ai's modelling code
(contrastors, models/huggingface/modeling_hf_nomic_bert.py, the module the
hub's nomic-embed-text folders load with trust_remote_code):
NomicBertEmbeddings (word + token type 0; no position table when rotary),
emb_ln, post-norm NomicBertBlock (norm1(attn + x), norm2(mlp + h)),
NomicBertAttention (one fused Wqkv split as (three h d), rotary on q and k
in GPT-NeoX's rotate-half form, softmax(q kᵀ/√d) v, out_proj) and
NomciBertGatedMLP (fc11(x) · act(fc12(x)), then fc2; act silu for
"swiglu", gelu for "geglu") or NomicBertMLP (fc2(act(fc1(x)))). One
sequence at a time, no padding. Config names are GPT-2's (n_embd, n_head,
n_layer, n_inner, layer_norm_epsilon, activation_function).
"""

import math

import torch
import torch.nn.functional as F


def linear(w, prefix, x):
    return F.linear(x, w[prefix + ".weight"], w.get(prefix + ".bias"))


def layer_norm(w, prefix, x, eps):
    return F.layer_norm(x, (x.shape[-1],), w[prefix + ".weight"],
                        w.get(prefix + ".bias"), eps)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary(x, base):
    """x: (n, heads, d); positions 0 … n−1."""
    n, _, d = x.shape
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)
    cos = torch.cat([freqs.cos(), freqs.cos()], -1).unsqueeze(1)
    sin = torch.cat([freqs.sin(), freqs.sin()], -1).unsqueeze(1)
    return x * cos + rotate_half(x) * sin


def attention(w, config, prefix, x):
    heads = config["n_head"]
    n, hidden = x.shape
    d = hidden // heads
    qkv = linear(w, prefix + ".Wqkv", x).view(n, 3, heads, d)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
    if config.get("rotary_emb_fraction", 0) > 0:
        q = rotary(q, config["rotary_emb_base"])
        k = rotary(k, config["rotary_emb_base"])
    q, k, v = (t.transpose(0, 1) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    out = (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(n, hidden)
    return linear(w, prefix + ".out_proj", out)


def mlp(w, config, prefix, x):
    act = config["activation_function"]
    if act in ("swiglu", "geglu"):
        gate_act = F.silu if act == "swiglu" else F.gelu
        y = linear(w, prefix + ".fc11", x) * gate_act(linear(w, prefix + ".fc12", x))
    else:
        y = F.gelu(linear(w, prefix + ".fc1", x),
                   approximate="tanh" if act in ("gelu_new", "gelu_fast",
                                                 "gelu_pytorch_tanh") else "none")
    return linear(w, prefix + ".fc2", y)


def forward(w, config, ids):
    eps = config["layer_norm_epsilon"]
    x = w["embeddings.word_embeddings.weight"][ids]
    if config.get("type_vocab_size", 0) > 0:
        x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(w, "emb_ln", x, eps)
    for i in range(config["n_layer"]):
        p = f"encoder.layers.{i}"
        h = layer_norm(w, p + ".norm1", attention(w, config, p + ".attn", x) + x,
                       eps)
        x = layer_norm(w, p + ".norm2", mlp(w, config, p + ".mlp", h) + h, eps)
    return x


def weight_shapes(config):
    h = config["n_embd"]
    inner = config["n_inner"]
    shapes = {
        "embeddings.word_embeddings.weight": (config["vocab_size"], h),
        "emb_ln.weight": (h,), "emb_ln.bias": (h,),
    }
    if config.get("type_vocab_size", 0) > 0:
        shapes["embeddings.token_type_embeddings.weight"] = (
            config["type_vocab_size"], h)
    gated = config["activation_function"] in ("swiglu", "geglu")
    for i in range(config["n_layer"]):
        p = f"encoder.layers.{i}"
        shapes[p + ".attn.Wqkv.weight"] = (3 * h, h)
        shapes[p + ".attn.out_proj.weight"] = (h, h)
        if config.get("qkv_proj_bias", True):
            shapes[p + ".attn.Wqkv.bias"] = (3 * h,)
            shapes[p + ".attn.out_proj.bias"] = (h,)
        for fc in (("fc11", "fc12") if gated else ("fc1",)):
            shapes[f"{p}.mlp.{fc}.weight"] = (inner, h)
            if config.get("mlp_fc1_bias", True):
                shapes[f"{p}.mlp.{fc}.bias"] = (inner,)
        shapes[p + ".mlp.fc2.weight"] = (h, inner)
        if config.get("mlp_fc2_bias", True):
            shapes[p + ".mlp.fc2.bias"] = (h,)
        for norm in ("norm1", "norm2"):
            shapes[f"{p}.{norm}.weight"] = (h,)
            shapes[f"{p}.{norm}.bias"] = (h,)
    return shapes
