#!/usr/bin/env python3
"""tools/distill on tiny Hugging Face folders, their students served by
favor-server.

    distill_hf_test.py SERVER FAVOR_MODEL

Each teacher is a random Hugging Face folder as the hub lays one out
(tests/model/hf_reference.py writes it: config.json, model.safetensors in
the architecture's names, sentence-transformers' files, a WordPiece
vocab.txt written here), served with softmax attention:
  - "bert": BertModel, mean pooling, normalised;
  - "xlm_roberta": XLMRobertaForMaskedLM (weights under "roberta.", an LM
    head, the I64 position_ids buffer), positions numbered after the
    padding id, [CLS] pooling, not normalised;
  - "nomic_bert": NomicBertModel as nomic-embed-text lays it out (rotary,
    one fused Wqkv, SwiGLU, no linear biases, the vocabulary padded to a
    multiple of 8), trained at 32 tokens: the teacher is served (and
    compared) up to its max_trained_positions, the student past it;
  - "modernbert": ModernBertForMaskedLM (weights under "model.", its head)
    in gte-modernbert's form (pre-norm, no biases, GeGLU from one Wi, two
    rotary bases, global layers 0 and 3, the others local with a window of
    8), 32 positions: the student's global layers are FAVOR+, its local
    ones stay exact; served past the teacher's length.
Checks, for each:
  1. distillation lowers the objective on held-out texts by a tenth or more
     and brings the student's embeddings nearer the teacher's than the swap
     alone;
  2. it writes the teacher's folder (the same tensor names, the head kept)
     with a favor.json naming the student's attention, that favor-server
     serves, and the served embeddings equal the tool's own forward on that
     folder to 1e-4 (FAVOR+; for bert also FAVOR++ with m 64, seed 5);
  3. the served teacher (no favor.json) equals the tool's softmax forward,
     so the tool's reading of the folder (positions, pooling) is the
     server's, not only the student's attention.
"""

import json
import os
import shutil
import sys
import tempfile

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.join(_HERE, "..", "..")
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(_ROOT, "tools", "distill"))
sys.path.insert(0, os.path.join(_ROOT, "tools", "train_default"))
import distill_test  # noqa: E402
import export_state_dict  # noqa: E402
import hf_folder  # noqa: E402
import hf_reference  # noqa: E402
import serving  # noqa: E402
import tokens  # noqa: E402
from hf import bert  # noqa: E402
from hf import modernbert  # noqa: E402
from hf import nomic_bert  # noqa: E402

TOLERANCE = 1e-4
# Tiny models: two threads on a loaded machine take ten times as long.
ONE_THREAD = ("--threads", "1")

CASES = {
    "bert": {
        "config": {"model_type": "bert", "max_position_embeddings": 64,
                   "type_vocab_size": 2, "hidden_act": "gelu",
                   "layer_norm_eps": 1e-12, "pad_token_id": 0},
        "class": "BertModel", "prefix": "",
        "sentence_transformers": {"pooling": "mean", "normalize": True},
    },
    "xlm_roberta": {
        "config": {"model_type": "xlm-roberta", "max_position_embeddings": 66,
                   "type_vocab_size": 1, "hidden_act": "gelu",
                   "layer_norm_eps": 1e-5, "pad_token_id": 1,
                   "bos_token_id": 0, "eos_token_id": 2},
        "class": "XLMRobertaForMaskedLM", "prefix": "roberta.",
        "head": {"lm_head.dense.weight": (32, 32), "lm_head.dense.bias": (32,),
                 "lm_head.layer_norm.weight": (32,), "lm_head.layer_norm.bias": (32,)},
        "position_ids_buffer": True,
        "sentence_transformers": {"pooling": "cls", "normalize": False},
    },
    "nomic_bert": {
        "module": nomic_bert,
        "config": {"model_type": "nomic_bert", "n_embd": 32, "n_head": 4,
                   "n_layer": 2, "n_inner": 48, "pad_vocab_size_multiple": 8,
                   "max_trained_positions": 32, "n_positions": 64,
                   "activation_function": "swiglu", "layer_norm_epsilon": 1e-12,
                   "rotary_emb_fraction": 1.0, "rotary_emb_base": 1000,
                   "qkv_proj_bias": False, "mlp_fc1_bias": False,
                   "mlp_fc2_bias": False, "type_vocab_size": 2, "pad_token_id": 0},
        "class": "NomicBertModel", "prefix": "",
        "sentence_transformers": {"pooling": "mean", "normalize": True},
        "teacher_limit": 32,
    },
    "modernbert": {
        "module": modernbert,
        "config": {"model_type": "modernbert", "hidden_size": 32,
                   "num_attention_heads": 4, "num_hidden_layers": 4,
                   "intermediate_size": 40, "max_position_embeddings": 32,
                   "hidden_activation": "gelu", "norm_eps": 1e-5, "norm_bias": False,
                   "attention_bias": False, "mlp_bias": False,
                   "global_attn_every_n_layers": 3, "local_attention": 8,
                   "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
                   "pad_token_id": 0},
        "class": "ModernBertForMaskedLM", "prefix": "model.",
        "head": {"head.dense.weight": (32, 32), "head.norm.weight": (32,),
                 "decoder.bias": (16,)},
        "sentence_transformers": {"pooling": "mean", "normalize": True},
        "teacher_limit": 32,
    },
}


def make_teacher(name, folder):
    vocab = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
             ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(distill_test.WORDS)) +
             ["##s", "##ing", "##ed"])
    case = CASES[name]
    module = case.get("module", bert)
    config = dict(hf_reference._SMALL if module is bert else {}, **case["config"],
                  vocab_size=len(vocab))
    generator = torch.Generator().manual_seed(sum(map(ord, name)))
    multiple = config.get("pad_vocab_size_multiple", 1)
    stored = dict(config, vocab_size=-(-len(vocab) // multiple) * multiple)
    weights = hf_reference.draw(module.weight_shapes(stored), generator)
    for norm in [n for n in weights if n.endswith(("emb_ln.weight", "norm1.weight",
                                                   "norm2.weight"))]:
        # nomic's norm names escape draw()'s unit-scale rule: at 1/sqrt(32)
        # the attention logits are near 0 and FAVOR+ would match softmax
        # before any training.
        weights[norm] = 1 + 0.3 * torch.randn(weights[norm].shape, generator=generator,
                                              dtype=torch.float64)
    hf_reference.write_folder(folder, case, config, weights, generator)
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True}, f)
    with open(os.path.join(folder, "README.md"), "w") as f:
        f.write("the hub's card\n")


def parity(server, favor_model, folder, texts, label, failures, max_tokens=None):
    """favor-server's embeddings of `texts` (those of at most `max_tokens`
    tokens) against the tool's forward on `folder` (hf_folder reads its
    favor.json, if any), each text alone. Returns the longest input."""
    ids = tokens.tokenize(favor_model, folder, texts)
    if max_tokens is not None:
        texts = [t for t, row in zip(texts, ids) if len(row) <= max_tokens]
        ids = [row for row in ids if len(row) <= max_tokens]
    encoder = hf_folder.load(folder).eval()
    with torch.no_grad():
        reference = torch.stack([
            encoder.served(torch.tensor([row]), torch.ones(1, len(row), dtype=torch.bool))[0]
            for row in ids]).double()
    with serving.Server(server, folder) as served:
        got = served.embed(texts)
    difference = (got - reference).abs().max().item()
    print(f"{label}: served against the tool's forward, {len(texts)} texts up to "
          f"{max(map(len, ids))} tokens: max |difference| {difference:.2e}")
    if not difference <= TOLERANCE:
        failures.append(f"{label}: served embeddings differ from the tool's "
                        f"forward by {difference:.2e}")
    return max(map(len, ids))


def check_folder(teacher, student, attention, label, failures):
    with open(os.path.join(student, "favor.json")) as f:
        overlay = json.load(f)
    for key, value in attention.items():
        if overlay["attention"].get(key) != value:
            failures.append(f"{label}: favor.json has attention {key} "
                            f"{overlay['attention'].get(key)!r}, not {value!r}")
    before = export_state_dict.read_safetensors(os.path.join(teacher, "model.safetensors"))
    after = export_state_dict.read_safetensors(os.path.join(student, "model.safetensors"))
    expected = set(before) - {n for n in before if n.endswith("embeddings.position_ids")}
    if set(after) != expected:
        failures.append(f"{label}: the student's tensors {sorted(set(after) ^ expected)} "
                        "differ from the teacher's names")
    for name in ("config.json", "vocab.txt", "modules.json", "README.md"):
        with open(os.path.join(teacher, name), "rb") as a, \
                open(os.path.join(student, name), "rb") as b:
            if a.read() != b.read():
                failures.append(f"{label}: {name} is not the teacher's")
    for name in ("DISTILLED.md", "training.json"):
        if not os.path.exists(os.path.join(student, name)):
            failures.append(f"{label}: the student's folder has no {name}")


def main():
    server, favor_model = sys.argv[1:3]
    failures = []
    work = tempfile.mkdtemp(prefix="favor_distill_hf_test_")
    try:
        texts = os.path.join(work, "texts.txt")
        with open(texts, "w") as f:
            f.write("\n".join(distill_test.sentences(400, 0)) + "\n")
        probe = distill_test.sentences(6, 1) + distill_test.sentences(1, 2, 50, 55)
        for name in CASES:
            teacher = os.path.join(work, name)
            make_teacher(name, teacher)
            limit = CASES[name].get("teacher_limit")
            parity(server, favor_model, teacher, probe, f"{name} teacher (softmax)",
                   failures, limit)
            student = os.path.join(work, name + "_student")
            distill_test.run_distill(favor_model, teacher, texts, student, "--steps", "24",
                                     *ONE_THREAD)
            with open(os.path.join(student, "training.json")) as f:
                figures = json.load(f)["held_out"]
            early, later = figures["swapped"]["loss"], figures["distilled"]["loss"]
            swapped, after = figures["swapped"]["mean"], figures["distilled"]["mean"]
            print(f"{name}: held-out objective: swapped {early:.5f}, distilled "
                  f"{later:.5f}; cosine to the teacher: swapped {swapped:.4f}, "
                  f"distilled {after:.4f}")
            if not later < 0.9 * early:
                failures.append(f"{name}: the loss did not fall: {early:.5f} -> {later:.5f}")
            if not after > swapped:
                failures.append(f"{name}: the student is no nearer the teacher: "
                                f"{swapped:.4f} -> {after:.4f}")
            attention = {"kernel": "favor+", "num_random_features": 256,
                         "projection_seed": 0, "feature_epsilon": 1e-4}
            check_folder(teacher, student, attention, name, failures)
            longest = parity(server, favor_model, student, probe,
                             f"{name} student (favor+)", failures)
            if limit is not None and not longest > limit:
                failures.append(f"{name}: no probe is longer than the teacher's "
                                f"{limit} tokens ({longest})")
        plus_plus = os.path.join(work, "bert_favor_plus_plus")
        distill_test.run_distill(favor_model, os.path.join(work, "bert"), texts, plus_plus,
                                 "--steps", "4", "--kernel", "favor++", "--features", "64",
                                 "--projection-seed", "5", *ONE_THREAD)
        check_folder(os.path.join(work, "bert"), plus_plus,
                     {"kernel": "favor++", "num_random_features": 64,
                      "projection_seed": 5}, "bert favor++", failures)
        parity(server, favor_model, plus_plus, probe, "bert student (favor++, m 64, seed 5)",
               failures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
