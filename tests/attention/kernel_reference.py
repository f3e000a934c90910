#!/usr/bin/env python3
"""Reference outputs for every attention kernel, written from the papers.

    kernel_reference.py --output FILE.json

Each kernel below is transcribed from its paper's formulas (cited at each
function), in float64, as an explicit L×L computation: none of the chunking,
prefix states or fused loops of server/attention, and no code shared with it.
The script draws random, non-degenerate cases (batch 2, 3 heads, unequal
query and key lengths, key padding, causal and not), rounds the inputs to
float32 (what the C++ side receives), computes the expected outputs from
those rounded inputs and writes everything to FILE.json for
kernel_reference_test.cc, which runs the attention library on the same
inputs and compares.

Before writing, the script checks its own transcriptions: the random-feature
kernels must approach exact softmax attention with many features, and Shen's
formula in its matrix form must equal its L×L form. A wrong formula here thus
fails here, not as a mysterious mismatch in C++.

Notation (as the papers): x' = d^-1/4 x splits softmax's 1/√d temperature
between queries and keys, h(x) = ‖x'‖²/2, W the m×d projection with rows ω.
"""

import argparse
import json
import math
import sys

import torch

BATCH, HEADS, DIM, VALUE_DIM, FEATURES = 2, 3, 8, 6, 16
QUERY_LEN, KEY_LEN, CAUSAL_LEN = 5, 9, 8
# Keys kept per sequence: the second sequence is padded.
KEY_LENGTHS, CAUSAL_LENGTHS = (9, 6), (8, 5)
DEFAULT_EPSILON = 1e-4  # AttentionOptions::feature_epsilon


def scaled(x):
    return x * x.shape[-1] ** -0.25


def half_norm(x):
    return (scaled(x) ** 2).sum(-1, keepdim=True) / 2


# --- Feature maps, unshifted (the estimators themselves). -----------------

def favor_plus(x, w):
    """Positive random features, Choromanski et al., "Rethinking Attention
    with Performers", ICLR 2021, Lemma 1 (SM⁺): φ(x) = m^-1/2 exp(ωᵢᵀx' −
    ‖x'‖²/2), i = 1..m."""
    return torch.exp(scaled(x) @ w.T - half_norm(x)) / math.sqrt(w.shape[0])


def hyperbolic(x, w):
    """Hyperbolic positive random features, Performer paper, Lemma 1
    (SM⁺_hyp): φ(x) = (2m)^-1/2 exp(−‖x'‖²/2) (exp(ωᵢᵀx'), exp(−ωᵢᵀx'))."""
    u = scaled(x) @ w.T
    return (torch.exp(-half_norm(x)) * torch.cat([torch.exp(u), torch.exp(-u)], -1)
            / math.sqrt(2 * w.shape[0]))


def trigonometric(x, w):
    """Trigonometric random features, Performer paper, eq. (SM_trig) (after
    Rahimi and Recht 2007): φ(x) = m^-1/2 exp(‖x'‖²/2) (sin ωᵢᵀx', cos ωᵢᵀx').
    Feature order does not change φ(q)ᵀφ(k)."""
    u = scaled(x) @ w.T
    return (torch.exp(half_norm(x)) * torch.cat([torch.cos(u), torch.sin(u)], -1)
            / math.sqrt(w.shape[0]))


def relu(x, w):
    """Generalized attention, Performer paper §2.3 with f = ReLU, h = 1:
    φ(x) = relu(ωᵢᵀx'). The paper's m^-1/2 is left out, as
    docs/attention.md states: a constant factor cancels in attention (and
    FeatureMap returns φ without it)."""
    return torch.relu(scaled(x) @ w.T)


def elu_plus_one(x, w):
    """Katharopoulos et al., "Transformers are RNNs", ICML 2020, eq. (7):
    φ(x) = elu(x) + 1 on the raw head vector, no projection."""
    del w
    return torch.where(x > 0, x + 1, torch.exp(x))


def favor_plus_plus(x, w, a):
    """Optimal positive random features, Likhosherstov et al., "Chefs'
    Random Tables: Non-Trigonometric Random Features", NeurIPS 2022 (the
    positive GERF, FAVOR++): φ(x) = m^-1/2 D exp(A‖ω‖² + B ωᵀx' − ‖x'‖²/2),
    B = √(1 − 4A), D = (1 − 4A)^(d/4), for A < 1/4 (one A per (batch,
    head), shape (B, H, 1, 1))."""
    d = x.shape[-1]
    b, big_d = torch.sqrt(1 - 4 * a), (1 - 4 * a) ** (d / 4)
    u = scaled(x) @ w.T
    omega = (w * w).sum(-1)
    return (big_d * torch.exp(a * omega + b * u - half_norm(x))
            / math.sqrt(w.shape[0]))


def favor_plus_plus_a(q, k, keep):
    """The paper's A* (its eq. for the optimal A of the positive GERF, as
    docs/attention.md derives it): A* = (1 − 2ρ − √((2ρ + 1)² + 8ρ)) / 16,
    ρ = (mean‖q'‖² + mean‖k'‖² + 2 q̄'ᵀk̄') / d over a sequence's queries
    and kept keys. Which queries count is the library's documented choice:
    all of them, but with as many queries as keys (a padded batch pads
    both) only those at kept positions."""
    d = q.shape[-1]
    kw = keep[:, None, :, None].double()
    qw = kw if q.shape[-2] == k.shape[-2] else torch.ones_like(q[..., :1])

    def mean(x, weight):
        return (x * weight).sum(-2) / weight.sum(-2)

    qs, ks = scaled(q), scaled(k)
    rho = (mean((qs * qs).sum(-1, keepdim=True), qw)
           + mean((ks * ks).sum(-1, keepdim=True), kw)
           + 2 * (mean(qs, qw) * mean(ks, kw)).sum(-1, keepdim=True)) / d
    a = (1 - 2 * rho - torch.sqrt((2 * rho + 1) ** 2 + 8 * rho)) / 16
    return a[..., None]  # (B, H, 1, 1)


FEATURE_MAPS = {"favor+": favor_plus, "hyperbolic": hyperbolic,
                "trig": trigonometric, "relu": relu, "elu+1": elu_plus_one}


# --- Attention, as L×L weights over the keys each query may see. ----------

def visible(lq, lk, keep, causal):
    """(B, 1, Lq, Lk) bool: key j is kept and, if causal, j ≤ i."""
    seen = keep[:, None, None, :].expand(-1, 1, lq, lk)
    if causal:
        seen = seen & torch.ones(lq, lk, dtype=torch.bool).tril()
    return seen


def normalise(weights, seen, v):
    """out_i = Σ_j a_ij v_j / Σ_j a_ij over the visible keys; a query that
    sees no key gets 0 (the library's documented convention)."""
    weights = weights * seen
    total = weights.sum(-1, keepdim=True)
    out = (weights @ v) / torch.where(total == 0, torch.ones_like(total), total)
    return out * seen.any(-1, keepdim=True)


def softmax_attention(q, k, v, keep, causal):
    """softmax(QKᵀ/√d)V (Vaswani et al. 2017), with the usual max shift."""
    seen = visible(q.shape[-2], k.shape[-2], keep, causal)
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    logits = logits.masked_fill(~seen, -math.inf)
    top = logits.amax(-1, keepdim=True).clamp_min(-1e300)
    return normalise(torch.exp(logits - top), seen, v)


def linear_attention(kernel, q, k, v, w, keep, causal, epsilon=0.0):
    """Katharopoulos et al. 2020, eqs. (4)–(5) and, causal, (8)–(9):
    out_i = φ(q_i)ᵀ Σ_j φ(k_j) v_jᵀ / φ(q_i)ᵀ Σ_j φ(k_j), written here as the
    L×L weights φ(q_i)ᵀφ(k_j) (the order of the sums changes nothing in exact
    arithmetic). With epsilon > 0, ε is added after the stabilising shifts of
    the Performer reference code (below)."""
    seen = visible(q.shape[-2], k.shape[-2], keep, causal)
    if epsilon:
        return normalise(shifted_weights(kernel, q, k, w, seen, epsilon),
                         seen, v)
    if kernel == "favor++":
        a = favor_plus_plus_a(q, k, keep)
        phi_q, phi_k = favor_plus_plus(q, w, a), favor_plus_plus(k, w, a)
    else:
        phi_q, phi_k = FEATURE_MAPS[kernel](q, w), FEATURE_MAPS[kernel](k, w)
    return normalise(phi_q @ phi_k.transpose(-1, -2), seen, v)


def key_shift(uk, seen):
    """(B, H, Lq, 1, 1): for each query, the max of uk (B, H, Lk, F) over
    the keys it sees and every feature; a query that sees none gets 0."""
    key_max = uk.amax(-1)[:, :, None, :]  # (B, H, 1, Lk)
    top = key_max.masked_fill(~seen, -math.inf).amax(-1, keepdim=True)
    return torch.where(torch.isinf(top), torch.zeros_like(top), top)[..., None]


def shifted_weights(kernel, q, k, w, seen, epsilon):
    """The weights φ(q_i)ᵀ(φ(k_j) + ε) with ε after the stabilising shifts,
    (B, H, Lq, Lk). The shifts are those of the Performer reference code
    (google-research/performer, fast_attention, softmax_kernel_transformation:
    queries exp(u − h − maxᵢ uᵢ) + ε per row, keys exp(u − h − max u) + ε
    with the max over the keys and features of the sequence and head;
    generalized_kernel_feature_creator: f(u) + ε), except that each query
    takes the max over the keys it sees: all of them without a causal mask,
    as the reference code, and only those up to it with one, so that no
    later key changes it (the reference code's global max does; the
    library's documented choice, docs/attention.md). Constant factors are
    dropped (they cancel). Only FAVOR+ and ReLU: the shift of the other
    kernels is the library's own choice, not a paper's."""
    uq, uk = scaled(q) @ w.T, scaled(k) @ w.T
    if kernel == "relu":
        return (torch.relu(uq) + epsilon) @ (torch.relu(uk) + epsilon).transpose(-1, -2)
    assert kernel == "favor+"
    phi_q = torch.exp(uq - half_norm(q) - uq.amax(-1, keepdim=True)) + epsilon
    return weights_with_key_shift(phi_q, uk - half_norm(k), key_shift(uk, seen),
                                  seen, epsilon)


def weights_with_key_shift(phi_q, log_phi_k, shift, seen, epsilon):
    """Σ_f φ(q_i)_f (exp(log φ(k_j)_f − shift_i) + ε), (B, H, Lq, Lk), for
    key features given by their logarithms (B, H, Lk, F) and each query's
    key shift (B, H, Lq, 1, 1); keys a query does not see are left out
    (their unshifted exponents may overflow)."""
    exponents = log_phi_k[:, :, None] - shift  # (B, H, Lq, Lk, F)
    exponents = exponents.masked_fill(~seen[..., None], -math.inf)
    return torch.einsum("bhif,bhijf->bhij", phi_q, torch.exp(exponents) + epsilon)


def shen_attention(q, k, v, keep, causal):
    """Shen et al., "Efficient Attention: Attention with Linear
    Complexities", WACV 2021, eq. (2): E = ρ_q(Q) (ρ_k(K)ᵀ V), ρ_q the
    softmax of each query over its channels, ρ_k the softmax of each key
    channel over the keys, no scaling. Causal: the keys' softmax runs over
    the keys a query may see, j ≤ i. As L×L weights:
    a_ij = Σ_c ρ_q(q_i)_c · exp(k_jc) / Σ_{j' visible} exp(k_j'c)."""
    seen = visible(q.shape[-2], k.shape[-2], keep, causal)  # (B,1,Lq,Lk)
    rho_q = torch.softmax(q, -1)  # (B,H,Lq,d)
    ek = torch.exp(k)  # (B,H,Lk,d)
    # column sums over the visible keys of each query: (B,H,Lq,d)
    sums = seen.to(ek.dtype) @ ek
    weights = torch.einsum("bhic,bhjc->bhij", rho_q / sums.clamp_min(1e-300), ek)
    out = (weights * seen) @ v
    return out * seen.any(-1, keepdim=True)


def reference(kernel, q, k, v, w, keep, causal, epsilon=0.0):
    if kernel == "softmax":
        return softmax_attention(q, k, v, keep, causal)
    if kernel == "exp":
        return shen_attention(q, k, v, keep, causal)
    return linear_attention(kernel, q, k, v, w, keep, causal, epsilon)


# --- Self-checks of the transcriptions. -----------------------------------

def relative_error(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def check_transcriptions(gen):
    """The random-feature estimators are unbiased for exp(q'ᵀk'): with 2^17
    iid features their attention is within a few percent of softmax's.
    Shen's L×L form equals the paper's matrix form ρ_q(Q)(ρ_k(K)ᵀV)."""
    q = 0.5 * torch.randn(1, 2, 6, DIM, generator=gen, dtype=torch.float64)
    k = 0.5 * torch.randn(1, 2, 7, DIM, generator=gen, dtype=torch.float64)
    v = torch.randn(1, 2, 7, VALUE_DIM, generator=gen, dtype=torch.float64)
    keep = torch.ones(1, 7, dtype=torch.bool)
    w = torch.randn(1 << 17, DIM, generator=gen, dtype=torch.float64)
    exact = softmax_attention(q, k, v, keep, False)
    for kernel in ("favor+", "favor++", "hyperbolic", "trig"):
        error = relative_error(linear_attention(kernel, q, k, v, w, keep, False),
                               exact)
        print(f"self-check: {kernel} with 2^17 features vs softmax: {error:.2e}")
        if error > 0.02:
            sys.exit(f"{kernel}: the transcription does not approximate softmax")
    matrix_form = torch.softmax(q, -1) @ (torch.softmax(k, -2).transpose(-1, -2) @ v)
    error = relative_error(shen_attention(q, k, v, keep, False), matrix_form)
    print(f"self-check: Shen L×L vs matrix form: {error:.2e}")
    if error > 1e-12:
        sys.exit("exp: the two forms of Shen's formula differ")


# --- Cases. ---------------------------------------------------------------

def float32(t):
    """Rounded to float32 (what the library receives), held in float64."""
    return t.float().double()


def tensor_json(t):
    return {"shape": list(t.shape), "data": t.flatten().tolist()}


def make_case(gen, name, kernel, causal, epsilon=0.0, scale=0.6, norms=None):
    lq, lk = (CAUSAL_LEN, CAUSAL_LEN) if causal else (QUERY_LEN, KEY_LEN)
    lengths = CAUSAL_LENGTHS if causal else KEY_LENGTHS
    q = scale * torch.randn(BATCH, HEADS, lq, DIM, generator=gen, dtype=torch.float64)
    k = scale * torch.randn(BATCH, HEADS, lk, DIM, generator=gen, dtype=torch.float64)
    if norms is not None:  # rows rescaled to norms spread over [1, norms]
        for x in (q, k):
            target = norms ** torch.rand(x.shape[:-1] + (1,), generator=gen,
                                         dtype=torch.float64)
            x.mul_(target / x.norm(dim=-1, keepdim=True))
    v = torch.randn(BATCH, HEADS, lk, VALUE_DIM, generator=gen, dtype=torch.float64)
    w = torch.randn(FEATURES, DIM, generator=gen, dtype=torch.float64)
    q, k, v, w = map(float32, (q, k, v, w))
    keep = torch.arange(lk)[None, :] < torch.tensor(lengths)[:, None]
    case = {"name": name, "kernel": kernel, "causal": causal,
            "epsilon": epsilon, "query": tensor_json(q), "key": tensor_json(k),
            "value": tensor_json(v), "projection": tensor_json(w),
            "padding": tensor_json((~keep).double()),
            "expected": tensor_json(reference(kernel, q, k, v, w, keep, causal,
                                              epsilon))}
    if kernel in FEATURE_MAPS and not causal:
        # φ(q)ᵀφ(k) of FeatureMap's unshifted role, ε = 0 (whatever the
        # case's ε): the estimator itself, exp(q'ᵀk') on average.
        gram = FEATURE_MAPS[kernel](q, w) @ FEATURE_MAPS[kernel](k, w).transpose(-1, -2)
        case["gram"] = tensor_json(gram)
    if kernel == "favor++" and not causal:
        a = favor_plus_plus_a(q, k, keep)
        gram = favor_plus_plus(q, w, a) @ favor_plus_plus(k, w, a).transpose(-1, -2)
        case["gram"] = tensor_json(gram)
        case["favor_plus_plus_a"] = tensor_json(a[..., 0, 0])
    return case


def make_cases(gen):
    cases = []
    for kernel in ("softmax", "favor+", "favor++", "hyperbolic", "trig", "relu",
                   "elu+1", "exp"):
        for causal in (False, True):
            tag = "causal" if causal else "noncausal"
            # Trig features can be negative, so its denominators can come
            # near zero, where float32's rounding is amplified past any fixed
            # tolerance (1.65e-5 on an AVX2 CPU with LibTorch 2.6, causal):
            # smaller inputs keep them close to the positive softmax ones,
            # as attention_test's InputScale does.
            scale = 0.3 if kernel == "trig" else 0.6
            cases.append(make_case(gen, f"{kernel}_{tag}", kernel, causal,
                                   scale=scale))
    for kernel in ("favor+", "relu"):
        for causal in (False, True):
            tag = "causal" if causal else "noncausal"
            cases.append(make_case(gen, f"{kernel}_{tag}_epsilon", kernel,
                                   causal, DEFAULT_EPSILON))
    # Extreme inputs. Exact attention: logits in the hundreds (|qᵀk|/√d up to
    # about 500), where an unshifted exp overflows float32. FAVOR+: row norms
    # spread up to 1e3, where the projections u = Wx' reach thousands and
    # only the shifts keep exp finite; tokens with large norms have features
    # that underflow to ε, in float64 as in float32.
    for causal in (False, True):
        tag = "causal" if causal else "noncausal"
        cases.append(make_case(gen, f"softmax_{tag}_large_logits", "softmax",
                               causal, scale=12.0))
        cases.append(make_case(gen, f"softmax_{tag}_norms_1e3", "softmax",
                               causal, norms=1e3))
        cases.append(make_case(gen, f"favor+_{tag}_norms_1e3", "favor+",
                               causal, DEFAULT_EPSILON, norms=1e3))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    gen = torch.Generator().manual_seed(20240518)
    check_transcriptions(gen)
    cases = make_cases(gen)
    with open(args.output, "w") as out:
        json.dump({"cases": cases}, out)
    print(f"wrote {len(cases)} cases to {args.output}")


if __name__ == "__main__":
    main()
