"""The configurations the parity test runs: a small base model (exact
attention, post-norm LayerNorm at PyTorch's ε, GELU, learned positions,
encoder blocks, mean pooling) and one case per value of each config axis
over it, plus the interactions that matter (rotary × every linear kernel,
causal × every kernel, pre-norm × ScaleNorm, the blocks × linear kernels,
whose sublayers count projections differently).

Case names are file names and gtest trace labels; group names are gtest
parameter names (letters, digits and underscores).
"""

import copy

VOCAB, HIDDEN, HEADS, FFN, LAYERS, POSITIONS = 97, 32, 2, 48, 2, 64
LENGTHS = [1, 5, 17, 40, 23]  # one packed call; the 1 is an edge case
LATENTS, INDUCING_POINTS = 6, 4

BASE = {
    "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_attention_heads": HEADS,
    "intermediate_size": FFN, "num_hidden_layers": LAYERS,
    "hidden_act": "gelu", "norm": "layer_norm", "norm_placement": "post",
    "layer_norm_eps": 1e-5, "position_embedding_type": "absolute",
    "max_position_embeddings": POSITIONS, "max_sequence_length": POSITIONS,
    "attention": {"kernel": "softmax"}, "block": "encoder",
    "pooling": "mean", "normalize": False,
}

# Kernels with their gtest-safe names; m = 24 is not a multiple of d = 16.
KERNEL_NAMES = {
    "softmax": "softmax", "favor+": "favor_plus", "favor++": "favor_plus_plus",
    "hyperbolic": "hyperbolic", "trig": "trig", "relu": "relu",
    "elu+1": "elu_plus_one", "exp": "exp",
}
FEATURES = 24
# Trigonometric features change sign, so attention's normaliser
# Σ_j φ(q_i)ᵀφ(k_j) sums terms of both signs; at the base's query and key
# sizes (‖x'‖² near 4) it nearly cancels for some queries, which amplifies
# float32 rounding to 4e-4 relative. Query and key layers scaled by 0.3 keep
# the estimate near exp(q'ᵀk') > 0, and the trig cases near 5e-7.
TRIG_QUERY_KEY_SCALE = 0.3
# ε large enough that ignoring it (or LayerNorm's) moves the outputs far
# beyond the tolerance; PyTorch's 1e-5 would move them by about 1e-5.
LARGE_EPS = 0.05
# ScaleNorm's floor: within the spread of the norms of the vectors the norms
# see, so that it is the divisor for some rows and not others (the
# reference checks: about 60% of them).
SCALE_NORM_FLOOR = 7.0


def kernel(name, **attention):
    out = {"kernel": name}
    if name not in ("softmax", "elu+1", "exp"):
        out["num_random_features"] = FEATURES
    out.update(attention)
    return {"attention": out}


def merged(overrides):
    config = copy.deepcopy(BASE)
    for key, value in overrides.items():
        if key == "attention":
            config["attention"] = dict(config["attention"], **value)
        else:
            config[key] = value
    return config


def case_table():
    """[(group, name, config, options)]; options: stored (projections stored
    in the file rather than drawn from the seed), floor (ScaleNorm's floor
    must be active for some rows), torch_names (the layers exported as
    torch.nn.TransformerEncoder's state dict, through the exporter's
    renaming), query_key_scale (of the query and key layers' weights). A
    group is one gtest case (one process) that runs its cases in turn."""
    table = []
    group = []

    def add(name, stored=False, floor=False, torch_names=False, **overrides):
        config = merged(dict(overrides, version=f"parity-{name}"))
        trig = config["attention"]["kernel"] == "trig"
        table.append((group[-1], name, config, {
            "stored": stored, "floor": floor, "torch_names": torch_names,
            "query_key_scale": TRIG_QUERY_KEY_SCALE if trig else 1.0}))

    linear = [k for k in KERNEL_NAMES if k != "softmax"]
    pre, rotary = {"norm_placement": "pre"}, {"position_embedding_type": "rotary"}
    cross = {"block": "cross_attention", "num_latents": LATENTS}
    isab = {"block": "isab", "num_inducing_points": INDUCING_POINTS}

    group.append("norms")  # placement × type, and ε
    # Exported from torch.nn.TransformerEncoder's own state dict.
    add("exact_post", torch_names=True)
    add("exact_pre", torch_names=True, hidden_act="relu",
        position_embedding_type="none", **pre)
    add("layer_norm_eps_post", layer_norm_eps=LARGE_EPS)
    add("layer_norm_eps_pre", layer_norm_eps=LARGE_EPS, **pre)
    add("scale_norm_post", norm="scale_norm")
    add("scale_norm_pre", norm="scale_norm", **pre)
    add("scale_norm_floor", floor=True, norm="scale_norm",
        layer_norm_eps=SCALE_NORM_FLOOR)
    group.append("activations")  # gelu is the base's
    add("gelu_tanh", hidden_act="gelu_tanh")
    add("relu_activation", hidden_act="relu")
    group.append("positions")  # and token types
    add("rotary", **rotary)
    add("rotary_base_500", rotary_base=500.0, **rotary)
    add("positions_none", position_embedding_type="none")
    add("no_token_types", type_vocab_size=0)
    group.append("kernels")
    add("favor_post", stored=True, **kernel("favor+", num_random_features=32))
    for k in linear:
        add(f"kernel_{KERNEL_NAMES[k]}", **kernel(k))
    group.append("causal")
    for k in KERNEL_NAMES:
        add(f"causal_{KERNEL_NAMES[k]}", **kernel(k, causal=True))
    group.append("rotary_kernels")
    for k in linear:
        add(f"rotary_{KERNEL_NAMES[k]}", rotary_base=500.0, **rotary, **kernel(k))
    add("causal_rotary_favor_plus", **rotary, **kernel("favor+", causal=True))
    group.append("feature_epsilon")
    for k in ("favor+", "favor++", "hyperbolic", "relu"):
        add(f"epsilon_{KERNEL_NAMES[k]}", **kernel(k, feature_epsilon=1e-2))
    add("epsilon_0_favor_plus", **kernel("favor+", feature_epsilon=0.0))
    group.append("projections")  # every option of the generator, or stored
    add("projection_sqrt_dim", **kernel("favor+", row_norm="sqrt_dim"))
    add("projection_iid", **kernel("favor+", orthogonal=False,
                                   num_random_features=20))
    add("projection_simplex", **kernel("favor+", simplex=True))
    add("projection_seed", **kernel("favor+", projection_seed=12345))
    add("stored_hyperbolic", stored=True, **kernel("hyperbolic"))
    group.append("blocks")  # with kernels whose projections they number
    add("cross_attention", **cross)
    add("cross_attention_favor_plus", **cross, **kernel("favor+"))
    add("cross_attention_favor_plus_plus", **cross, **kernel("favor++"))
    add("cross_attention_pre_scale_norm", norm="scale_norm", **cross, **pre)
    add("isab", **isab)
    add("isab_favor_plus_plus", **isab, **kernel("favor++"))
    add("isab_relu", **isab, **kernel("relu", projection_seed=3))
    add("isab_pre", **isab, **pre)
    # The config's pooling and normalisation (what an Embed call without
    # options does; every case also checks every pooling as options).
    group.append("pooling")
    add("pooling_mean_normalized", normalize=True)
    add("pooling_cls_normalized", pooling="cls", normalize=True)
    add("pooling_attention", pooling="attention")
    add("pooling_none_normalized", pooling="none", normalize=True)
    add("pooling_cls_cross_attention", pooling="cls", **cross)
    return table
