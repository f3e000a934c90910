"""The forward pass of docs/models.md ("The forward pass"), one sequence at
a time, in float64, written from the formulas with PyTorch's functional
layers (F.linear, F.layer_norm, F.gelu, F.relu) where they exist.

Only the formulas and the weight names are shared with the C++: no
packing, no row blocks, no fused query|key|value, no head groups. The
reference takes a config dict (config.json's fields) and a dict of weights
by name; self_check.py holds it to torch.nn.TransformerEncoder.
"""

import math

import torch
from torch.nn import functional as F

from . import attention


class NormStats:
    """How often ScaleNorm's floor ε was the divisor, so that a case meant
    to exercise the floor can show that it does (and one not meant to, that
    it does not)."""

    def __init__(self):
        self.rows = 0
        self.floored = 0


class Reference:
    def __init__(self, config, weights, projections):
        """`projections`: the (m, d) matrix of each attention sublayer in
        forward order (docs/models.md, Projections), or Nones."""
        self.config = config
        self.w = weights
        self.projections = projections
        self.hidden = weights["embeddings.word_embeddings.weight"].shape[1]
        self.heads = config["num_attention_heads"]
        self.head_dim = self.hidden // self.heads
        self.stats = NormStats()

    def get(self, key, default=None):
        return self.config.get(key, default)

    # ---- Per-token pieces. ----

    def norm(self, prefix, x):
        """LayerNorm (PyTorch's), or ScaleNorm (Nguyen & Salazar 2019):
        y = g · x / max(‖x‖₂, ε)."""
        eps = self.get("layer_norm_eps", 1e-12)
        if self.get("norm", "layer_norm") == "layer_norm":
            return F.layer_norm(x, (self.hidden,), self.w[prefix + ".weight"],
                                self.w[prefix + ".bias"], eps)
        length = x.norm(dim=-1, keepdim=True)
        self.stats.rows += length.numel()
        self.stats.floored += int((length < eps).sum())
        return self.w[prefix + ".scale"] * x / length.clamp_min(eps)

    def activation(self, x):
        name = self.get("hidden_act", "gelu")
        if name == "gelu":
            return F.gelu(x)  # erf
        if name == "gelu_tanh":
            return F.gelu(x, approximate="tanh")
        assert name == "relu", name
        return F.relu(x)

    def linear(self, prefix, x):
        return F.linear(x, self.w[prefix + ".weight"], self.w[prefix + ".bias"])

    def rotary(self, x):
        """RoFormer (Su et al. 2021), eq. (34) in complex form: feature pair
        j becomes the complex number z_j, rotated to z_j · e^{i p θ_j} at
        position p, θ_j = base^(−2j/d), j < d/2. The pairs are (j, j + d/2)
        (the rotate-half convention of docs/models.md), and p restarts at 0
        in every sequence. x: (H, L, d)."""
        half = self.head_dim // 2
        base = self.get("rotary_base", 10000.0)
        theta = base ** (-2.0 * torch.arange(half, dtype=torch.float64)
                         / self.head_dim)
        angle = torch.arange(x.shape[1], dtype=torch.float64)[:, None] * theta
        z = torch.complex(x[..., :half], x[..., half:]) * torch.polar(
            torch.ones_like(angle), angle)
        return torch.cat([z.real, z.imag], -1)

    # ---- Layers. ----

    def split(self, x):
        return x.reshape(x.shape[0], self.heads, self.head_dim).transpose(0, 1)

    def multi_head(self, prefix, a, b, sublayer):
        """MultiHead(A, B): queries from A, keys and values from B."""
        attn = self.get("attention", {})
        q = self.split(self.linear(prefix + ".attention.self.query", a))
        k = self.split(self.linear(prefix + ".attention.self.key", b))
        v = self.split(self.linear(prefix + ".attention.self.value", b))
        if self.get("position_embedding_type", "absolute") == "rotary":
            q, k = self.rotary(q), self.rotary(k)  # encoder blocks only
        out = attention.attend(attn.get("kernel", "favor+"), q, k, v,
                               self.projections[sublayer],
                               attn.get("causal", False),
                               attn.get("feature_epsilon", 1e-4))
        out = out.transpose(0, 1).reshape(a.shape[0], self.hidden)
        return self.linear(prefix + ".attention.output.dense", out)

    def layer(self, prefix, a, b, sublayer):
        """post: h = N1(A + MultiHead(A, B)); y = N2(h + FFN(h))
        pre:  h = A + MultiHead(N1(A), N1(B)); y = h + FFN(N2(h))
        b is None for self-attention (B = A)."""
        n1, n2 = prefix + ".attention.output.LayerNorm", prefix + ".output.LayerNorm"

        def ffn(h):
            inner = self.activation(self.linear(prefix + ".intermediate.dense", h))
            return self.linear(prefix + ".output.dense", inner)

        if self.get("norm_placement", "post") == "post":
            h = self.norm(n1, a + self.multi_head(
                prefix, a, a if b is None else b, sublayer))
            return self.norm(n2, h + ffn(h))
        na = self.norm(n1, a)
        h = a + self.multi_head(prefix, na, na if b is None else self.norm(n1, b),
                                sublayer)
        return h + ffn(self.norm(n2, h))

    # ---- The whole pass. ----

    def embed(self, ids):
        x = self.w["embeddings.word_embeddings.weight"][ids]
        if self.get("position_embedding_type", "absolute") == "absolute":
            x = x + self.w["embeddings.position_embeddings.weight"][:len(ids)]
        if "embeddings.token_type_embeddings.weight" in self.w:
            x = x + self.w["embeddings.token_type_embeddings.weight"][0]
        return self.norm("embeddings.LayerNorm", x)

    def forward(self, ids):
        """Output vectors of one sequence (tokens, or latents)."""
        x = self.embed(torch.as_tensor(ids))
        layers = self.get("num_hidden_layers")
        block = self.get("block", "encoder")
        for n in range(layers):
            prefix = f"encoder.layer.{n}"
            if block == "encoder":
                x = self.layer(prefix, x, None, n)
            elif block == "cross_attention":
                x = (self.layer(prefix, self.w["encoder.latents"], x, 0) if n == 0
                     else self.layer(prefix, x, None, n))
            else:
                assert block == "isab", block
                induced = self.layer(prefix + ".induced",
                                     self.w[prefix + ".inducing_points"], x, 2 * n)
                x = self.layer(prefix, x, induced, 2 * n + 1)
        if self.get("norm_placement", "post") == "pre":
            x = self.norm("encoder.final_norm", x)
        return x


def pool(y, pooling, query):
    """docs/models.md, Pooling; y (n, H) one sequence's output vectors."""
    if pooling == "mean":
        return y.mean(0)
    if pooling == "cls":
        return y[0]
    if pooling == "attention":
        return torch.softmax(y @ query / math.sqrt(y.shape[1]), 0) @ y
    assert pooling == "none", pooling
    return y


def l2_normalised(x):
    """Each vector (row) divided by max(‖x‖₂, 1e-12)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
