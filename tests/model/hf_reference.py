#!/usr/bin/env python3
"""Hugging Face folders with random weights, and their reference outputs.

    hf_reference.py --output DIR

For each case below it writes DIR/repository/<case>/ as the Hugging Face
hub lays a model out (config.json with model_type and architectures,
model.safetensors in the architecture's real weight names, a task model's
prefix and head where the case has one, and sentence-transformers' files
where it has them), and DIR/expected/<case>.json with the outputs of a
float64 reference transcribed from the architecture's published modelling
code (hf/bert.py, ...) and sentence-transformers' pooling
(hf/sentence_transformers.py). hf_parity_test.cc loads the folders through
Favor's model library and compares.

expected/<case>.json: token_ids and offsets (several sequences, packed),
"tokens" (each sequence's last hidden state, one list of rows), "pooled"
(each sequence's embedding as the folder's pooling and normalisation make
it), and what Favor must read from the folder: architecture, pooling,
normalize, max_sequence_length.
"""

import argparse
import json
import os
import struct
import sys

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
from hf import bert  # noqa: E402
from hf import modernbert  # noqa: E402
from hf import nomic_bert  # noqa: E402
from hf import sentence_transformers as st  # noqa: E402

_SMALL = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
          "intermediate_size": 56, "vocab_size": 97}

# name: the architecture's config (beyond _SMALL), the task class and its
# prefix and head, sentence-transformers' settings, sequence lengths.
CASES = {
    "bert": {
        "module": bert,
        "config": {"model_type": "bert", "max_position_embeddings": 40,
                   "type_vocab_size": 2, "hidden_act": "gelu",
                   "layer_norm_eps": 1e-12, "pad_token_id": 0},
        "class": "BertModel", "prefix": "",
        "lengths": [1, 7, 23, 40],
    },
    "bert_task_cls": {
        "module": bert,
        "config": {"model_type": "bert", "max_position_embeddings": 48,
                   "type_vocab_size": 2, "hidden_act": "gelu_new",
                   "layer_norm_eps": 1e-6, "pad_token_id": 0},
        "class": "BertForMaskedLM", "runs_as": "BertModel", "prefix": "bert.",
        "head": {"cls.predictions.bias": (97,),
                 "cls.predictions.transform.dense.weight": (32, 32),
                 "cls.predictions.transform.dense.bias": (32,),
                 "cls.predictions.transform.LayerNorm.weight": (32,),
                 "cls.predictions.transform.LayerNorm.bias": (32,)},
        "position_ids_buffer": True,
        "sentence_transformers": {"pooling": "cls", "normalize": True,
                                  "max_seq_length": 30},
        "lengths": [2, 9, 30],
    },
    "roberta": {
        "module": bert,
        "config": {"model_type": "roberta", "max_position_embeddings": 34,
                   "type_vocab_size": 1, "hidden_act": "gelu",
                   "layer_norm_eps": 1e-5, "pad_token_id": 1,
                   "bos_token_id": 0, "eos_token_id": 2},
        "class": "RobertaModel", "prefix": "",
        "sentence_transformers": {"pooling": "mean", "normalize": False},
        # 34 rows, padding id 1: 32 tokens at most.
        "lengths": [1, 6, 19, 32],
        # A padding id inside a sequence keeps position padding_idx and
        # does not advance the count.
        "pad_inside": True,
    },
    "xlm_roberta_task": {
        "module": bert,
        "config": {"model_type": "xlm-roberta", "max_position_embeddings": 30,
                   "type_vocab_size": 1, "hidden_act": "gelu",
                   "layer_norm_eps": 1e-5, "pad_token_id": 1,
                   "bos_token_id": 0, "eos_token_id": 2},
        "class": "XLMRobertaForMaskedLM", "runs_as": "XLMRobertaModel",
        "prefix": "roberta.",
        "head": {"lm_head.dense.weight": (32, 32), "lm_head.dense.bias": (32,),
                 "lm_head.layer_norm.weight": (32,),
                 "lm_head.layer_norm.bias": (32,), "lm_head.bias": (97,)},
        "position_ids_buffer": True,
        "sentence_transformers": {"pooling": "mean", "normalize": True},
        "lengths": [3, 11, 28],
    },
    # nomic-embed-text's shape in small: rotary (base 1000), SwiGLU, no
    # linear biases, Wqkv fused; trained at 24 tokens, read further.
    "nomic_bert": {
        "module": nomic_bert,
        "config": {"model_type": "nomic_bert", "n_embd": 32, "n_head": 4,
                   "n_layer": 2, "n_inner": 48, "vocab_size": 95,
                   "pad_vocab_size_multiple": 8, "n_positions": 64,
                   "max_trained_positions": 24, "activation_function": "swiglu",
                   "layer_norm_epsilon": 1e-12, "rotary_emb_fraction": 1.0,
                   "rotary_emb_base": 1000, "rotary_emb_interleaved": False,
                   "rotary_emb_scale_base": None, "rotary_scaling_factor": None,
                   "qkv_proj_bias": False, "mlp_fc1_bias": False,
                   "mlp_fc2_bias": False, "prenorm": False, "causal": False,
                   "type_vocab_size": 2, "pad_token_id": 0,
                   "auto_map": {"AutoModel":
                                "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"}},
        "class": "NomicBertModel", "prefix": "",
        "sentence_transformers": {"pooling": "mean", "normalize": True},
        "lengths": [1, 8, 24],
        # The vocabulary as stored: padded to a multiple of 8.
        "stored_vocab": 96,
    },
    # The same past its training length: favor.json lets it read 200
    # tokens (exact attention; rotary has no table to run out of).
    "nomic_bert_long": {
        "module": nomic_bert,
        "config": {"model_type": "nomic_bert", "n_embd": 32, "n_head": 4,
                   "n_layer": 2, "n_inner": 48, "vocab_size": 96,
                   "n_positions": 64, "max_trained_positions": 24,
                   "activation_function": "swiglu", "layer_norm_epsilon": 1e-12,
                   "rotary_emb_fraction": 1.0, "rotary_emb_base": 1000,
                   "qkv_proj_bias": False, "mlp_fc1_bias": False,
                   "mlp_fc2_bias": False, "type_vocab_size": 2},
        "class": "NomicBertModel", "prefix": "",
        "overlay": {"max_sequence_length": 200},
        "sentence_transformers": {"pooling": "max", "normalize": False},
        "lengths": [3, 120, 200],
    },
    "nomic_bert_task_geglu": {
        "module": nomic_bert,
        "config": {"model_type": "nomic_bert", "n_embd": 32, "n_head": 2,
                   "n_layer": 2, "n_inner": 40, "vocab_size": 97,
                   "n_positions": 64, "max_trained_positions": 40,
                   "activation_function": "geglu", "layer_norm_epsilon": 1e-5,
                   "rotary_emb_fraction": 1.0, "rotary_emb_base": 10000,
                   "qkv_proj_bias": True, "mlp_fc1_bias": True,
                   "mlp_fc2_bias": True, "type_vocab_size": 0},
        "class": "NomicBertForPreTraining", "runs_as": "NomicBertModel",
        "prefix": "bert.",
        "sentence_transformers": {"pooling": "lasttoken", "normalize": True},
        "head": {"cls.predictions.transform.dense.weight": (32, 32),
                 "cls.predictions.transform.dense.bias": (32,),
                 "cls.predictions.transform.layer_norm.weight": (32,),
                 "cls.predictions.transform.layer_norm.bias": (32,),
                 "cls.predictions.decoder.bias": (97,)},
        "lengths": [5, 17, 40],
    },
    # gte-modernbert's shape in small: pre-norm without biases, GeGLU,
    # rotary bases 160000 (global) and 10000 (local), local layers (1, 2
    # and 4 of 0-4) with a window of 8 (4 each side); sequences longer
    # than the window.
    "modernbert": {
        "module": modernbert,
        "config": {"model_type": "modernbert", "hidden_size": 32,
                   "num_attention_heads": 4, "num_hidden_layers": 5,
                   "intermediate_size": 40, "vocab_size": 90,
                   "max_position_embeddings": 64, "hidden_activation": "gelu",
                   "norm_eps": 1e-5, "norm_bias": False,
                   "attention_bias": False, "mlp_bias": False,
                   "global_attn_every_n_layers": 3, "local_attention": 8,
                   "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
                   "pad_token_id": 3, "classifier_pooling": "mean"},
        "class": "ModernBertModel", "prefix": "",
        "sentence_transformers": {"pooling": "mean", "normalize": True},
        "lengths": [1, 4, 9, 33, 64],
    },
    # The same served with FAVOR+ by favor.json: its global layers (0 and 3)
    # change kernel, its local layers stay exact in their window, and it
    # reads 5 times its trained length.
    "modernbert_favor": {
        "module": modernbert,
        "config": {"model_type": "modernbert", "hidden_size": 32,
                   "num_attention_heads": 4, "num_hidden_layers": 5,
                   "intermediate_size": 40, "vocab_size": 90,
                   "max_position_embeddings": 64, "global_attn_every_n_layers": 3,
                   "local_attention": 8, "pad_token_id": 3},
        "class": "ModernBertModel", "prefix": "",
        "overlay": {"attention": {"kernel": "favor+", "num_random_features": 48,
                                  "projection_seed": 7,
                                  "feature_epsilon": 0.001},
                    "max_sequence_length": 320},
        "lengths": [5, 70, 320],
    },
    # The task model's file, transformers' newer spelling of the rotary
    # bases (rope_parameters, layer_types), biases everywhere, the tanh
    # GELU, every other layer global, a window of 6.
    "modernbert_task_biases": {
        "module": modernbert,
        "config": {"model_type": "modernbert", "hidden_size": 24,
                   "num_attention_heads": 2, "num_hidden_layers": 4,
                   "intermediate_size": 20, "vocab_size": 90,
                   "max_position_embeddings": 48,
                   "hidden_activation": "gelu_pytorch_tanh", "norm_eps": 1e-6,
                   "norm_bias": True, "attention_bias": True, "mlp_bias": True,
                   "global_attn_every_n_layers": 2, "local_attention": 6,
                   "layer_types": ["full_attention", "sliding_attention",
                                   "full_attention", "sliding_attention"],
                   "rope_parameters": {
                       "full_attention": {"rope_type": "default",
                                          "rope_theta": 80000.0},
                       "sliding_attention": {"rope_type": "default",
                                             "rope_theta": 5000.0}},
                   "pad_token_id": 3},
        "class": "ModernBertForMaskedLM", "runs_as": "ModernBertModel",
        "prefix": "model.",
        "head": {"head.dense.weight": (24, 24), "head.norm.weight": (24,),
                 "head.norm.bias": (24,), "decoder.bias": (90,)},
        "sentence_transformers": {"pooling": "cls", "normalize": False},
        "lengths": [2, 13, 48],
    },
}


def draw(shapes, generator):
    """float64 weights rounded to float32, away from 0 and 1 defaults."""
    weights = {}
    for name, shape in sorted(shapes.items()):
        if name.endswith("LayerNorm.weight") or name.endswith("layer_norm.weight") \
                or name.endswith("norm.weight"):
            t = 1 + 0.3 * torch.randn(shape, generator=generator, dtype=torch.float64)
        elif name.endswith(".bias"):
            t = 0.2 * torch.randn(shape, generator=generator, dtype=torch.float64)
        elif "embeddings" in name:
            t = 0.8 * torch.randn(shape, generator=generator, dtype=torch.float64)
        else:
            fan_in = shape[-1]
            t = torch.randn(shape, generator=generator,
                            dtype=torch.float64) / fan_in ** 0.5
        weights[name] = t.float().double()
    return weights


def sequences(case, config, generator):
    ids = []
    for length in case["lengths"]:
        # Never the padding id, except where the case plants one.
        seq = torch.randint(3, config["vocab_size"], (length,), generator=generator)
        if case.get("pad_inside") and length > 4:
            seq[length // 2] = config["pad_token_id"]
        ids.append(seq)
    return ids


_TAGS = {torch.float32: "F32", torch.int64: "I64"}


def write_safetensors(path, tensors):
    """As Hugging Face's writer lays a file out: a JSON header, then each
    tensor's little-endian bytes, each in its own dtype."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": _TAGS[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(value, out, indent=1)
        out.write("\n")


def write_folder(folder, case, config, weights, generator):
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "config.json"),
               dict(config, architectures=[case["class"]]))
    stored = {case["prefix"] + name: t.float() for name, t in weights.items()}
    if case["prefix"]:
        # A task model has its head instead of the base model's pooler.
        stored = {n: t for n, t in stored.items() if ".pooler." not in n}
        stored.update({n: t.float() for n, t in
                       draw(case.get("head", {}), generator).items()})
    if case.get("position_ids_buffer"):
        # Older checkpoints keep this buffer, in I64.
        stored[case["prefix"] + "embeddings.position_ids"] = torch.arange(
            config["max_position_embeddings"]).unsqueeze(0)
    write_safetensors(os.path.join(folder, "model.safetensors"), stored)
    if "overlay" in case:
        write_json(os.path.join(folder, "favor.json"), case["overlay"])
    settings = case.get("sentence_transformers")
    if settings:
        write_json(os.path.join(folder, "modules.json"),
                   st.modules(settings["normalize"]))
        write_json(os.path.join(folder, "1_Pooling", "config.json"),
                   st.pooling_config(settings["pooling"],
                                     config.get("hidden_size", config.get("n_embd"))))
        if "max_seq_length" in settings:
            write_json(os.path.join(folder, "sentence_bert_config.json"),
                       {"max_seq_length": settings["max_seq_length"],
                        "do_lower_case": False})


def run_case(name, case, output):
    generator = torch.Generator().manual_seed(sum(map(ord, name)))
    # BERT's names for the shape; NomicBERT's config spells it GPT-2's way.
    config = dict(_SMALL if case["module"] is bert else {}, **case["config"])
    module = case["module"]
    shapes = module.weight_shapes(dict(config, vocab_size=case.get(
        "stored_vocab", config["vocab_size"])))
    weights = draw(shapes, generator)
    write_folder(os.path.join(output, "repository", name), case, config,
                 weights, generator)
    settings = case.get("sentence_transformers") or {}
    # Without sentence-transformers' files, Favor's own defaults.
    pooling = settings.get("pooling", "mean")
    normalize = settings.get("normalize", False)
    ids = sequences(case, config, generator)
    tokens, pooled = [], []
    for seq in ids:
        y = (module.forward(weights, config, seq, case["overlay"])
             if module is modernbert and "overlay" in case
             else module.forward(weights, config, seq))
        tokens.append(y.tolist())
        vector = st.pool(y, pooling)
        pooled.append((st.normalize(vector) if normalize else vector).tolist())
    offsets = [0]
    for seq in ids:
        offsets.append(offsets[-1] + len(seq))
    if config["model_type"] == "nomic_bert":
        limit = config["max_trained_positions"]
    else:
        limit = config["max_position_embeddings"]
    if config["model_type"] in ("roberta", "xlm-roberta"):
        limit -= config["pad_token_id"] + 1
    limit = min(limit, settings.get("max_seq_length", limit))
    limit = case.get("overlay", {}).get("max_sequence_length", limit)
    write_json(os.path.join(output, "expected", name + ".json"), {
        # What Favor runs: the base model under the task class.
        "architecture": case.get("runs_as", case["class"]),
        # Favor's name for sentence-transformers' mode.
        "pooling": {"lasttoken": "last_token"}.get(pooling, pooling),
        "normalize": normalize,
        "kernel": case.get("overlay", {}).get("attention", {}).get(
            "kernel", "softmax"),
        "max_sequence_length": limit,
        "token_ids": torch.cat(ids).tolist(), "offsets": offsets,
        "tokens": tokens, "pooled": pooled,
    })


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, case in CASES.items():
        run_case(name, case, args.output)
    write_json(os.path.join(args.output, "cases.json"), sorted(CASES))
    print(f"hf_reference: {len(CASES)} folders in {args.output}")


if __name__ == "__main__":
    main()
