"""The default model in PyTorch, computing what favor-server computes.

A BERT-shaped post-norm encoder with rotary positions and FAVOR+ attention
(Choromanski et al., "Rethinking Attention with Performers", ICLR 2021),
mean pooling and L2 normalisation. Parameter names are Favor's (BERT's), so
the state dict exports as it is (tools/export_state_dict.py). What the server
does, and this module therefore does too (docs/attention.md, docs/models.md):

  - embeddings: word + token type 0, then LayerNorm; no position table;
  - rotary (RoFormer): per head, the first half of q and k rotated against
    the second, angle position · base^(−2i/d), positions from 0 per sequence;
  - FAVOR+: x' = d^-1/4 x, u = W x', φ(q) = exp(u − ‖q'‖²/2 − maxᵢ uᵢ) + ε per
    query row, φ(k) = exp(u − ‖k'‖²/2 − max u) + ε with the max over the
    sequence's keys and the head; W drawn from projection_seed + layer by
    the generator that tests/attention/projection_reference.py transcribes;
  - FAVOR++ (kernel "favor++", tools/distill's students): the same with
    the projection mapped per sequence and head, u -> B u + A ||w_f||^2, A
    the optimal one of docs/attention.md;
  - mean pooling over every token, [CLS] and [SEP] included.
"""

import math
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(_ROOT, "tests", "attention"))
import projection_reference  # noqa: E402


class Config:
    """The default model's shape (models/README.md); fields as config.json."""

    def __init__(self, **overrides):
        self.vocab_size = 30522
        self.hidden_size = 256
        self.num_hidden_layers = 4
        self.num_attention_heads = 4
        self.intermediate_size = 1024
        self.layer_norm_eps = 1e-12
        self.rotary_base = 10000.0
        self.num_random_features = 256
        self.projection_seed = 0
        self.feature_epsilon = 1e-4
        # "favor+" (the default model), "softmax" (exact attention: the
        # model that bench/transfer_study.py swaps to FAVOR+ and FAVOR++)
        # or "favor++" (tools/distill's students).
        self.kernel = "favor+"
        # "rotary" or "none" (no position information at all).
        self.position_embedding_type = "rotary"
        self.type_vocab_size = 2
        self.max_sequence_length = 1 << 20
        for key, value in overrides.items():
            if not hasattr(self, key):
                raise KeyError(key)
            setattr(self, key, value)

    @classmethod
    def from_favor(cls, c):
        """The Config of a Favor config.json (a dict) that this module
        computes exactly, or ValueError saying what it does not compute."""
        a = c.get("attention", {})
        expected = {"block": "encoder", "hidden_act": "gelu", "norm": "layer_norm",
                    "norm_placement": "post", "pooling": "mean", "normalize": True,
                    "feed_forward": "dense", "linear_bias": True, "norm_bias": True,
                    "position_ids": "from_zero", "local_attention_window": 0,
                    "num_latents": 0, "num_inducing_points": 0}
        for key, value in expected.items():
            if c.get(key, value) != value:
                raise ValueError(f"{key} {c[key]!r}: only {value!r} is supported")
        position = c.get("position_embedding_type", "rotary")
        if position not in ("rotary", "none"):
            raise ValueError(f"position_embedding_type {position!r}: only rotary "
                             "or none is supported")
        if a.get("kernel", "favor+") not in ("softmax", "favor+", "favor++"):
            raise ValueError(f"attention kernel {a['kernel']!r}: only softmax, "
                             "favor+ or favor++ is supported")
        for key, value in (("orthogonal", True), ("row_norm", "chi"),
                           ("simplex", False), ("causal", False)):
            if a.get(key, value) != value:
                raise ValueError(f"attention {key} {a[key]!r}: only {value!r} "
                                 "is supported")
        for key in ("num_attention_heads", "hidden_size", "num_hidden_layers",
                    "intermediate_size", "vocab_size"):
            if key not in c:
                raise ValueError(f"config.json has no {key}")
        return cls(
            vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
            num_hidden_layers=c["num_hidden_layers"],
            num_attention_heads=c["num_attention_heads"],
            intermediate_size=c["intermediate_size"],
            layer_norm_eps=c.get("layer_norm_eps", 1e-12),
            rotary_base=c.get("rotary_base", 10000.0),
            num_random_features=a.get("num_random_features", 256),
            projection_seed=a.get("projection_seed", 0),
            feature_epsilon=a.get("feature_epsilon", 1e-4),
            kernel=a.get("kernel", "favor+"), position_embedding_type=position,
            type_vocab_size=c.get("type_vocab_size", 2),
            max_sequence_length=c.get("max_sequence_length", 1 << 20))

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    def favor_config(self, version):
        """config.json for favor-server (docs/models.md)."""
        return {
            "version": version, "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size, "hidden_act": "gelu",
            "norm": "layer_norm", "norm_placement": "post",
            "layer_norm_eps": self.layer_norm_eps,
            "position_embedding_type": self.position_embedding_type,
            "rotary_base": self.rotary_base,
            "max_sequence_length": self.max_sequence_length,
            "attention": {"kernel": self.kernel,
                          "num_random_features": self.num_random_features,
                          "orthogonal": True, "row_norm": "chi",
                          "projection_seed": self.projection_seed,
                          "feature_epsilon": self.feature_epsilon},
            "block": "encoder", "pooling": "mean", "normalize": True,
        }


def projection(config, layer):
    """The server's draw for `layer` (seed projection_seed + layer)."""
    rows = projection_reference.draw(config.num_random_features, config.head_dim,
                                     config.projection_seed + layer, "orthogonal")
    return torch.tensor(rows, dtype=torch.float32).view(
        config.num_random_features, config.head_dim)


def rotary_tables(length, head_dim, base):
    """cos and sin, (length, head_dim/2), angles in double as the server."""
    half = head_dim // 2
    inverse = torch.exp(torch.arange(half, dtype=torch.float64) *
                        (-2.0 * math.log(base) / head_dim))
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inverse[None]
    return torch.cos(angles).float(), torch.sin(angles).float()


def rotate(x, cos, sin):
    """x: (..., L, d); the first half against the second."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([first * cos - second * sin, second * cos + first * sin], -1)


def favor_plus(q, k, v, w, keep, epsilon):
    """q, k, v: (B, H, L, d); keep: (B, L) bool; w: (m, d). In float32 even
    under bfloat16 autocast: the features are exponentials."""
    with torch.autocast(q.device.type, enabled=False):
        return _favor_plus(q.float(), k.float(), v.float(), w, keep, epsilon)


def _favor_plus(q, k, v, w, keep, epsilon):
    scale = q.shape[-1] ** -0.25
    qs, ks = q * scale, k * scale
    return _features_attend(qs @ w.T, ks @ w.T, qs, ks, v, keep, epsilon)


def favor_plus_plus(q, k, v, w, keep, epsilon):
    """FAVOR++ (docs/attention.md): FAVOR+ with the projection mapped per
    sequence and head, u -> B u + A ||w_f||^2, A the optimal one from the
    kept tokens' statistics; the shifts are taken over the mapped logits."""
    with torch.autocast(q.device.type, enabled=False):
        q, k, v = q.float(), k.float(), v.float()
        d = q.shape[-1]
        scale = d ** -0.25
        qs, ks = q * scale, k * scale
        kept = keep[:, None, :, None].to(q.dtype)
        count = kept.sum(-2)                                   # (B, 1, 1)

        def mean(x):
            return (x * kept).sum(-2) / count

        rho = (mean((qs * qs).sum(-1, keepdim=True))
               + mean((ks * ks).sum(-1, keepdim=True))
               + 2 * (mean(qs) * mean(ks)).sum(-1, keepdim=True)) / d
        a = ((1 - 2 * rho - torch.sqrt((2 * rho + 1) ** 2 + 8 * rho)) / 16)[..., None]
        b = torch.sqrt(1 - 4 * a)
        omega = (w * w).sum(-1)
        uq = b * (qs @ w.T) + a * omega
        uk = b * (ks @ w.T) + a * omega
        return _features_attend(uq, uk, qs, ks, v, keep, epsilon)


def _features_attend(uq, uk, qs, ks, v, keep, epsilon):
    half_q = (qs * qs).sum(-1, keepdim=True) / 2
    half_k = (ks * ks).sum(-1, keepdim=True) / 2
    kept = keep[:, None, :, None]
    key_max = uk.masked_fill(~kept, -math.inf).amax((-1, -2), keepdim=True)
    phi_q = torch.exp(uq - half_q - uq.amax(-1, keepdim=True).detach()) + epsilon
    phi_k = (torch.exp(uk - half_k - key_max.detach()) + epsilon) * kept
    context = phi_k.transpose(-1, -2) @ v
    normaliser = phi_q @ phi_k.sum(-2, keepdim=True).transpose(-1, -2)
    return (phi_q @ context) / normaliser


def softmax_attention(q, k, v, keep):
    """Exact attention, softmax(q kᵀ/√d) v over the kept keys; float32 as
    favor_plus."""
    with torch.autocast(q.device.type, enabled=False):
        q, k, v = q.float(), k.float(), v.float()
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~keep[:, None, None, :], -math.inf)
        return torch.softmax(scores, -1) @ v


def attend(config, q, k, v, w, keep):
    """config.kernel's attention of (B, H, L, d) heads: softmax, FAVOR+ or
    FAVOR++ with the projection w (the layer's draw)."""
    if config.kernel == "softmax":
        return softmax_attention(q, k, v, keep)
    if config.kernel == "favor++":
        return favor_plus_plus(q, k, v, w, keep, config.feature_epsilon)
    return favor_plus(q, k, v, w, keep, config.feature_epsilon)


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        h = config.hidden_size
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)


class Layer(nn.Module):
    def __init__(self, config, index):
        super().__init__()
        h, eps = config.hidden_size, config.layer_norm_eps
        self.config = config
        self.attention = nn.Module()
        self.attention.self = SelfAttention(config)
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(h, h)
        self.attention.output.LayerNorm = nn.LayerNorm(h, eps=eps)
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(h, config.intermediate_size)
        self.output = nn.Module()
        self.output.dense = nn.Linear(config.intermediate_size, h)
        self.output.LayerNorm = nn.LayerNorm(h, eps=eps)
        self.register_buffer("w", projection(config, index), persistent=False)

    def forward(self, x, keep, cos, sin):
        c, s = self.config, self.attention.self
        b, length, _ = x.shape

        def heads(t):
            return t.view(b, length, c.num_attention_heads, c.head_dim).transpose(1, 2)

        q, k, v = heads(s.query(x)), heads(s.key(x)), heads(s.value(x))
        if cos is not None:
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        a = attend(c, q, k, v, self.w, keep).transpose(1, 2)
        a = a.reshape(b, length, c.hidden_size).to(x.dtype)
        x = self.attention.output.LayerNorm(x + self.attention.output.dense(a))
        y = self.output.dense(F.gelu(self.intermediate.dense(x)))
        return self.output.LayerNorm(x + y)


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(config.vocab_size, h)
        self.embeddings.token_type_embeddings = nn.Embedding(config.type_vocab_size, h)
        self.embeddings.LayerNorm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(
            Layer(config, i) for i in range(config.num_hidden_layers))
        self.apply(_init_bert)

    def forward(self, ids, keep):
        """ids, keep: (B, L); returns L2-normalised mean-pooled (B, hidden)."""
        return self.forward_all(ids, keep)[0]

    def forward_all(self, ids, keep):
        """(pooled (B, hidden), [the embeddings' output, then each layer's
        output, each (B, L, hidden)])."""
        e = self.embeddings
        x = e.LayerNorm(e.word_embeddings(ids) + e.token_type_embeddings.weight[0])
        cos = sin = None
        if self.config.position_embedding_type == "rotary":
            cos, sin = rotary_tables(ids.shape[1], self.config.head_dim,
                                     self.config.rotary_base)
            cos, sin = cos.to(ids.device), sin.to(ids.device)
        hidden = [x]
        for layer in self.encoder.layer:
            x = layer(x, keep, cos, sin)
            hidden.append(x)
        return pool(x, keep), hidden


def pool(x, keep):
    """Mean over the kept tokens, L2-normalised."""
    weights = keep.to(x.dtype)[..., None]
    mean = (x * weights).sum(1) / weights.sum(1)
    return F.normalize(mean, dim=-1, eps=1e-12)


def _init_bert(module):
    """BERT's initialisation: N(0, 0.02) weights, zero biases, unit norms."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear):
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
