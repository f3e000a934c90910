"""One sequence's attention for every kernel of server/attention.

The kernels themselves are tests/attention/kernel_reference.py's
transcriptions of the papers (softmax, Shen's efficient attention, and every
feature map φ): nothing is written again here. What this module adds is
what the C++ does on top of the papers, because with ε > 0 it changes the
result.

The C++ (server/attention/features.cc) adds ε to positive features after a
stabilising shift. Without ε a per-query or per-sequence factor cancels in
the normalisation; with ε it does not, so the shift is part of the model.
Written as factors on the papers' φ (u = W x', x' = d^-1/4 x, h = ‖x'‖²/2,
m the projection's rows; maxima per head, over one sequence's keys):

  favor+      query i: φ(q_i) · √m · exp(−max_f u_if)            + ε
              key j:   φ(k_j) · √m · exp(−max_{j' ∈ S(i),f} u_j'f) + ε
              (the Performer reference code's shifts: a query by its own
              row max, keys by the max over S(i), the keys query i sees:
              the whole sequence, as the reference code, or with a causal
              mask the keys up to i, so that no later key changes query i's
              output: docs/attention.md, Stabilisers)
  favor++     the same with u replaced by B u + A‖ω_f‖² and √m by √m / D
              (A per sequence and head from its queries and keys)
  hyperbolic  query i: φ(q_i) · √(2m) · exp(−max_f |u_if|)        + ε
              key j:   φ(k_j) · √(2m) · exp(−max_{j' ∈ S(i),f} |u_j'f|) + ε
  relu        relu(u) + ε (kernel_reference leaves out m^-1/2, as the C++)
  trig, elu+1, exp: no ε; their shifts cancel exactly.

ε on the keys is added per token here; the C++ adds ε·Σv once per sequence
(or prefix), which is the same sum.
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "attention"))
import kernel_reference as papers  # noqa: E402

KERNELS = ("softmax", "favor+", "favor++", "hyperbolic", "trig", "relu",
           "elu+1", "exp")
PROJECTION_KERNELS = ("favor+", "favor++", "hyperbolic", "trig", "relu")


def stabilised_weights(kernel, q, k, w, keep, seen, epsilon):
    """φ(q_i)ᵀφ(k_j) as the C++ forms them, (1, H, Lq, Lk) (module doc)."""
    if kernel in ("trig", "elu+1"):
        phi_q, phi_k = papers.FEATURE_MAPS[kernel](q, w), papers.FEATURE_MAPS[kernel](k, w)
        return phi_q @ phi_k.transpose(-1, -2)
    if kernel == "relu":
        return (papers.relu(q, w) + epsilon) @ (papers.relu(k, w) + epsilon).transpose(-1, -2)
    m = w.shape[0]
    uq, uk = papers.scaled(q) @ w.T, papers.scaled(k) @ w.T
    if kernel == "favor+":
        phi_q, phi_k = papers.favor_plus(q, w), papers.favor_plus(k, w)
        factor = math.sqrt(m)
    elif kernel == "favor++":
        a = papers.favor_plus_plus_a(q, k, keep)
        phi_q = papers.favor_plus_plus(q, w, a)
        phi_k = papers.favor_plus_plus(k, w, a)
        b, omega = torch.sqrt(1 - 4 * a), (w * w).sum(-1)
        uq, uk = b * uq + a * omega, b * uk + a * omega
        factor = math.sqrt(m) / (1 - 4 * a) ** (q.shape[-1] / 4)
    elif kernel == "hyperbolic":
        phi_q, phi_k = papers.hyperbolic(q, w), papers.hyperbolic(k, w)
        uq, uk = uq.abs(), uk.abs()
        factor = math.sqrt(2 * m)
    else:
        raise ValueError(f"unknown kernel {kernel}")
    query = phi_q * factor * torch.exp(-uq.amax(-1, keepdim=True)) + epsilon
    return papers.weights_with_key_shift(query, torch.log(phi_k * factor),
                                         papers.key_shift(uk, seen), seen,
                                         epsilon)


def attend(kernel, q, k, v, w, causal, epsilon):
    """Attention of one sequence: q (H, Lq, d), k (H, Lk, d), v (H, Lk, dv)
    float64, w the (m, d) projection or None; returns (H, Lq, dv)."""
    q, k, v = q[None], k[None], v[None]  # kernel_reference's batch of one
    keep = torch.ones(1, k.shape[-2], dtype=torch.bool)
    if kernel == "softmax":
        return papers.softmax_attention(q, k, v, keep, causal)[0]
    if kernel == "exp":
        return papers.shen_attention(q, k, v, keep, causal)[0]
    seen = papers.visible(q.shape[-2], k.shape[-2], keep, causal)
    weights = stabilised_weights(kernel, q, k, w, keep, seen, epsilon)
    return papers.normalise(weights, seen, v)[0]
