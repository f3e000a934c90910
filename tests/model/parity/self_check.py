"""Checks of the reference itself, before it judges the C++: a wrong
formula here fails here, not as a puzzling mismatch in model_parity_test.

- The formula encoder equals PyTorch's own torch.nn.TransformerEncoder
  (post- and pre-norm with its final norm, GELU and ReLU) and
  torch.nn.MultiheadAttention for cross-attention (queries and keys of
  different lengths), given the same weights.
- Rotary embeddings keep norms, and ⟨R_p q, R_r k⟩ depends on p − r only
  (RoFormer's defining property).
- Without ε the stabilised features give the papers' unshifted attention
  (every factor cancels); with ε, FAVOR+'s and ReLU's equal
  kernel_reference's own transcription of the Performer code's shifts.
"""

import sys

import torch

from . import attention
from . import cases
from . import encoder
from . import weights


def _fail_if(error, limit, what):
    print(f"self-check: {what}: {error:.1e}")
    if not error <= limit:
        sys.exit(f"parity reference self-check failed: {what}")


def _relative(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def check_against_torch_encoder(norm_first, activation):
    config = cases.merged({"norm_placement": "pre" if norm_first else "post",
                           "hidden_act": activation})
    w, projections = weights.make_model(config, 1, stored_projections=False)
    reference = encoder.Reference(config, w, projections)
    stack = weights.torch_encoder(config, w)
    ids = torch.randint(0, cases.VOCAB, (23,),
                        generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        want = stack(reference.embed(ids)[None])[0]
    placement = "pre" if norm_first else "post"
    _fail_if(_relative(reference.forward(ids), want), 1e-12,
             f"{placement}-norm {activation} vs torch.nn.TransformerEncoder")


def check_cross_attention_against_torch():
    config = cases.merged({"block": "cross_attention", "num_latents": 6})
    w, projections = weights.make_model(config, 2, stored_projections=False)
    reference = encoder.Reference(config, w, projections)
    prefix = "encoder.layer.0"
    mha = weights.multi_head_attention(config, w, prefix)
    with torch.no_grad():
        x = torch.randn(11, cases.HIDDEN, dtype=torch.float64)
        latents = w["encoder.latents"]
        want = mha(latents[None], x[None], x[None], need_weights=False)[0][0]
    got = reference.multi_head(prefix, latents, x, 0)
    _fail_if(_relative(got, want), 1e-12,
             "cross-attention vs torch.nn.MultiheadAttention")


def check_rotary():
    config = cases.merged({"position_embedding_type": "rotary"})
    reference = encoder.Reference(config, weights.make_model(config, 3, False)[0], [])
    gen = torch.Generator().manual_seed(6)
    q, k = (torch.randn(1, 1, reference.head_dim, generator=gen,
                        dtype=torch.float64).expand(1, 12, -1) for _ in range(2))
    rq, rk = reference.rotary(q)[0], reference.rotary(k)[0]
    _fail_if(_relative(rq.norm(dim=-1), q[0].norm(dim=-1)), 1e-14,
             "rotary keeps norms")
    # ⟨R_p q, R_r k⟩ for p − r = 3 at three different p.
    dots = torch.stack([rq[p] @ rk[p - 3] for p in (3, 7, 11)])
    _fail_if(_relative(dots, dots[0].expand(3)), 1e-12,
             "rotary dot products depend on p - r only")
    moved = rq[4] @ rk[3]
    _fail_if(float(abs(moved - dots[0]) < 1e-3), 0, "rotary moves with p - r")


def check_stabilisers():
    papers = attention.papers
    gen = torch.Generator().manual_seed(7)
    q = 0.7 * torch.randn(1, 3, 6, 8, generator=gen, dtype=torch.float64)
    k = 0.7 * torch.randn(1, 3, 9, 8, generator=gen, dtype=torch.float64)
    v = torch.randn(1, 3, 9, 5, generator=gen, dtype=torch.float64)
    w = torch.randn(12, 8, generator=gen, dtype=torch.float64)
    keep = torch.ones(1, 9, dtype=torch.bool)
    for kernel in attention.PROJECTION_KERNELS + ("elu+1",):
        got = attention.attend(kernel, q[0], k[0], v[0], w, False, 0.0)
        want = papers.linear_attention(kernel, q, k, v, w, keep, False)[0]
        _fail_if(_relative(got, want), 1e-12,
                 f"{kernel} stabilised, eps 0, vs unshifted")
    # Causal: as many keys as queries.
    kc, keep_c = k[:, :, :6], keep[:, :6]
    for kernel in ("favor+", "relu"):
        for causal, keys, kept in ((False, k, keep), (True, kc, keep_c)):
            seen = papers.visible(q.shape[-2], keys.shape[-2], kept, causal)
            got = attention.stabilised_weights(kernel, q, keys, w, kept, seen,
                                               1e-2)
            want = papers.shifted_weights(kernel, q, keys, w, seen, 1e-2)
            _fail_if(_relative(got * seen, want * seen), 1e-12,
                     f"{kernel} with eps vs kernel_reference's shifts"
                     f" ({'causal' if causal else 'not causal'})")


def run():
    torch.manual_seed(0)  # nn modules' initial weights are overwritten
    check_against_torch_encoder(False, "gelu")
    check_against_torch_encoder(True, "relu")
    check_cross_attention_against_torch()
    check_rotary()
    check_stabilisers()
