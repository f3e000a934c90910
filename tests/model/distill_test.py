#!/usr/bin/env python3
"""tools/distill on a tiny softmax teacher, its student served by favor-server.

    distill_test.py SERVER FAVOR_MODEL

The teacher is a random 2-layer model that `favor-model init` writes (as
other tests make random models), with weights large enough (std 0.3) that
swapping its attention for FAVOR+ changes its embeddings, and a WordPiece
vocabulary written here. Checks:
  1. distillation lowers the objective on held-out texts by a tenth or more
     and brings the student's embeddings nearer the teacher's than the swap
     alone (the tool measures both before and after, on the same texts);
  2. it writes a folder (config.json with the student's attention, weights,
     the teacher's tokenizer, training.json, README.md) that favor-server
     serves, and the served embeddings equal the tool's own forward on that
     folder to 1e-4, for short texts and one past the curriculum's length;
     for FAVOR+ (at epsilon 1e-4 and make distill's 1e-8) and for FAVOR++;
  3. a run stopped half-way and resumed writes the same bytes as one that
     was not stopped, and a snapshot taken on the way (--snapshot-at) is the
     student of its step and changes nothing in the run.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.join(_HERE, "..", "..")
sys.path.insert(0, os.path.join(_ROOT, "tools", "distill"))
sys.path.insert(0, os.path.join(_ROOT, "tools", "train_default"))
import distill  # noqa: E402
import serving  # noqa: E402
import tokens  # noqa: E402

TOLERANCE = 1e-4
WORDS = ("the a server reads long documents and attends over tokens page lines "
         "cost more per token than short sentence compress decompress files "
         "utility reduces size using coding library drawing vector graphics "
         "screen web browser application viewing pages daemon clock time python "
         "bindings toolkit fonts printing dog cat music player audio chess game "
         "database tables queries network").split()
DISTILL = os.path.join(_ROOT, "tools", "distill", "distill.py")


def make_teacher(favor_model, folder, init_std=0.3):
    vocab = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
             ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS)) +
             ["##s", "##ing", "##ed"])
    vocab_file = os.path.join(os.path.dirname(folder), "vocab.txt")
    with open(vocab_file, "w") as f:
        f.write("\n".join(vocab) + "\n")
    subprocess.run([favor_model, "init", "--output", folder, "--kernel", "softmax",
                    "--layers", "2", "--hidden", "32", "--heads", "2", "--ffn", "64",
                    "--vocab", str(len(vocab)), "--tokenizer", vocab_file,
                    "--init_std", str(init_std)], check=True, stdout=subprocess.DEVNULL)


def sentences(count, seed, low=3, high=40):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(low, high)))
            for _ in range(count)]


def run_distill(favor_model, teacher, texts, output, *extra):
    command = [sys.executable, DISTILL, "--teacher", teacher, "--output", output,
               "--favor-model", favor_model, "--data", texts, "--batch", "8",
               "--teacher-tokens", "32", "--long-tokens", "64", "--lr", "1e-3",
               "--eval-texts", "50", "--threads", "2", "--dtype", "float32",
               "--checkpoint-every", "0", *extra]
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)


def parity(server, favor_model, folder, texts, attention, label, failures):
    """favor-server's embeddings of `texts` against the tool's forward with
    the attention settings the run was asked for (`attention`, config.json
    fields), which the folder's config must hold too."""
    config = distill.read_config(folder)
    for key, value in attention.items():
        if config["attention"].get(key) != value:
            failures.append(f"{label}: config.json has attention {key} "
                            f"{config['attention'].get(key)!r}, not {value!r}")
        config["attention"][key] = value
    ids = tokens.tokenize(favor_model, folder, texts)
    reference = distill.embed(distill.load_encoder(folder, config), ids)
    with serving.Server(server, folder) as served:
        got = served.embed(texts)
    difference = (got - reference).abs().max().item()
    print(f"{label}: served against the tool's forward, {len(texts)} texts up to "
          f"{max(map(len, ids))} tokens: max |difference| {difference:.2e}")
    if not difference <= TOLERANCE:
        failures.append(f"{label}: served embeddings differ from the tool's "
                        f"forward by {difference:.2e}")


def main():
    server, favor_model = sys.argv[1:3]
    failures = []
    work = tempfile.mkdtemp(prefix="favor_distill_test_")
    try:
        teacher = os.path.join(work, "teacher")
        make_teacher(favor_model, teacher)
        texts = os.path.join(work, "texts.txt")
        with open(texts, "w") as f:
            f.write("\n".join(sentences(400, 0)) + "\n")
        steps = ["--steps", "24"]

        student = os.path.join(work, "student")
        run_distill(favor_model, teacher, texts, student, *steps)
        with open(os.path.join(student, "training.json")) as f:
            record = json.load(f)
        figures = record["held_out"]
        early, later = figures["swapped"]["loss"], figures["distilled"]["loss"]
        swapped = figures["swapped"]["mean"]
        after = figures["distilled"]["mean"]
        print(f"held-out objective: swapped {early:.5f}, distilled {later:.5f}; "
              f"cosine to the teacher: swapped {swapped:.4f}, distilled {after:.4f}")
        if not later < 0.9 * early:
            failures.append(f"the loss did not fall: {early:.5f} -> {later:.5f}")
        if not after > swapped:
            failures.append(f"the student is no nearer the teacher: {swapped:.4f} "
                            f"-> {after:.4f}")
        for name in ("model.safetensors", "vocab.txt", "README.md", "training.json"):
            if not os.path.exists(os.path.join(student, name)):
                failures.append(f"the student's folder has no {name}")

        probe = sentences(6, 1) + [" ".join(sentences(30, 2, 10, 12))]
        parity(server, favor_model, student, probe,
               {"kernel": "favor+", "num_random_features": 256, "projection_seed": 0,
                "feature_epsilon": 1e-4}, "favor+", failures)

        resumed = os.path.join(work, "resumed")
        run_distill(favor_model, teacher, texts, resumed, *steps, "--stop-at", "12",
                    "--snapshot-at", "6")
        run_distill(favor_model, teacher, texts, resumed, *steps, "--resume")
        # The snapshot: the student as it stood at step 6, with its own
        # record; taking it changed nothing in the run (the bytes below).
        snapshot = resumed + "-at6"
        with open(os.path.join(snapshot, "training.json")) as f:
            shot = json.load(f)
        print(f"snapshot at step {shot['steps_run']}: {len(shot['history'])} steps "
              f"recorded, cosine {shot['held_out']['distilled']['mean']:.4f}")
        if shot["steps_run"] != 6 or len(shot["history"]) != 6 or \
                not shot["version"].endswith("-at6"):
            failures.append(f"the snapshot is not step 6's: {shot['steps_run']}, "
                            f"{len(shot['history'])} steps, {shot['version']}")
        with open(os.path.join(snapshot, "model.safetensors"), "rb") as a, \
                open(os.path.join(student, "model.safetensors"), "rb") as b:
            if a.read() == b.read():
                failures.append("the step-6 snapshot has the final weights")
        with open(os.path.join(student, "model.safetensors"), "rb") as a, \
                open(os.path.join(resumed, "model.safetensors"), "rb") as b:
            same = a.read() == b.read()
        print(f"stopped at step 12 and resumed: {'the same' if same else 'other'} weights")
        if not same:
            failures.append("a resumed run wrote other weights than an uninterrupted one")

        plus_plus = os.path.join(work, "favor_plus_plus")
        run_distill(favor_model, teacher, texts, plus_plus, "--steps", "4",
                    "--kernel", "favor++", "--features", "64", "--projection-seed", "5",
                    "--long-share", "0.5")
        # --long-share 0.5: of the second half's two steps, the first stays
        # at the teacher's 32 tokens and the second reads the full 64.
        with open(os.path.join(plus_plus, "training.json")) as f:
            lengths = [entry[1] for entry in json.load(f)["history"]]
        print(f"lengths with --long-share 0.5: {lengths}")
        if lengths != [32, 32, 32, 64]:
            failures.append(f"--long-share 0.5 read lengths {lengths}, not [32, 32, 32, 64]")
        parity(server, favor_model, plus_plus, probe,
               {"kernel": "favor++", "num_random_features": 64, "projection_seed": 5,
                "feature_epsilon": 1e-4}, "favor++ (m 64, seed 5)", failures)

        # make distill's epsilon (1e-8, docs/models.md, "Why the swap"): the
        # features nearly unfloored, the served student still the tool's.
        small_epsilon = os.path.join(work, "small_epsilon")
        run_distill(favor_model, teacher, texts, small_epsilon, "--steps", "4",
                    "--epsilon", "1e-8")
        parity(server, favor_model, small_epsilon, probe,
               {"kernel": "favor+", "num_random_features": 256, "projection_seed": 0,
                "feature_epsilon": 1e-8}, "favor+ (epsilon 1e-8)", failures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
