#!/usr/bin/env python3
"""tools/distill/swap_report.py on tiny softmax models that favor-model init
writes (distill_test's teacher, at two weight scales).

    swap_report_test.py FAVOR_MODEL

Checks, each against a figure the report does not compute the same way:
  1. the queries' norms: the same model with layer 1's query weights and
     bias doubled (its input, the embeddings' output, unchanged) reports
     four times layer 1's q² and the same k²;
  2. the uniform yardstick and the FAVOR+ path agree where they must: with
     an epsilon far above every feature (1e6) FAVOR+ attends uniformly, so
     its error equals uniform attention's, layer by layer;
  3. the estimate improves with m where it can: on a model with small
     query and key norms the error at m = 4096 is under half the error at
     m = 16 and under a third of uniform attention's;
  4. the entropy of each layer's rows lies within (0, log L];
  5. Hugging Face folders (distill_hf_test's tiny BERT and ModernBERT) are
     read as tools/distill reads them: every BERT layer is reported, of
     ModernBERT's only the global ones (1 and 4 of 4; the local ones stay
     exact; the report finds each by its projection, which must be one of
     the server's draws); check 2 holds there too.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.join(_HERE, "..", "..")
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(_ROOT, "tools"))
import distill_hf_test  # noqa: E402
import distill_test  # noqa: E402
import export_state_dict  # noqa: E402

REPORT = os.path.join(_ROOT, "tools", "distill", "swap_report.py")


def double_first_queries(source, output):
    shutil.copytree(source, output)
    path = os.path.join(output, "model.safetensors")
    tensors = export_state_dict.read_safetensors(path)
    names = [n for n in tensors if ".0." in n and "query" in n]
    if not names:
        raise SystemExit(f"no layer-1 query weights among {sorted(tensors)}")
    for name in names:
        tensors[name] = tensors[name] * 2
    export_state_dict.write_safetensors(path, tensors, tensors[names[0]].dtype)


def report(favor_model, model, texts, work, *extra):
    out = os.path.join(work, "report.json")
    subprocess.run([sys.executable, REPORT, "--model", model, "--favor-model", favor_model,
                    "--data", texts, "--texts", "24", "--threads", "2", "--json", out,
                    *extra], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def check_flat(result, label, failures):
    """Checks 2 and 4 on a report with epsilon 1e6."""
    for layer in result["layers"]:
        i = layer["layer"]
        if abs(layer["m64"] - layer["uniform"]) > 1e-4:
            failures.append(f"{label} layer {i}: with epsilon 1e6 FAVOR+'s error "
                            f"{layer['m64']} is not uniform attention's {layer['uniform']}")
        if not 0 < layer["entropy"] <= math.log(result["max_tokens"]):
            failures.append(f"{label} layer {i}: entropy {layer['entropy']} out of range")


def main():
    favor_model = sys.argv[1]
    failures = []
    work = tempfile.mkdtemp(prefix="favor_swap_report_test_")
    try:
        texts = os.path.join(work, "texts.txt")
        with open(texts, "w") as f:
            f.write("\n".join(distill_test.sentences(60, 0, 5, 24)) + "\n")
        large = os.path.join(work, "large", "model")
        os.makedirs(os.path.dirname(large))
        distill_test.make_teacher(favor_model, large, 0.3)
        doubled = os.path.join(work, "doubled")
        double_first_queries(large, doubled)

        base = report(favor_model, large, texts, work, "--features", "64")
        twice = report(favor_model, doubled, texts, work, "--features", "64")
        q, q2 = base["layers"][0]["q2"], twice["layers"][0]["q2"]
        k, k2 = base["layers"][0]["k2"], twice["layers"][0]["k2"]
        print(f"layer 1: q² {q:.4f} -> {q2:.4f} with doubled queries; k² {k:.4f} -> {k2:.4f}")
        if not (abs(q2 - 4 * q) <= 1e-3 * q and abs(k2 - k) <= 1e-4 * k):
            failures.append(f"doubled queries: q² {q} -> {q2} (want 4×), k² {k} -> {k2}")

        flat = report(favor_model, large, texts, work, "--features", "64",
                      "--epsilon", "1e6")
        for i, layer in enumerate(flat["layers"], 1):
            print(f"layer {i}: epsilon 1e6 error {layer['m64']:.6f}, uniform "
                  f"{layer['uniform']:.6f}; entropy {layer['entropy']:.3f}")
        check_flat(flat, "favor", failures)
        if [layer["layer"] for layer in flat["layers"]] != [1, 2]:
            failures.append(f"favor: layers {[layer['layer'] for layer in flat['layers']]}")

        small = os.path.join(work, "small", "model")
        os.makedirs(os.path.dirname(small))
        distill_test.make_teacher(favor_model, small, 0.08)
        scaling = report(favor_model, small, texts, work, "--features", "16,4096")
        for i, layer in enumerate(scaling["layers"], 1):
            print(f"layer {i}: q² {layer['q2']:.3f}, k² {layer['k2']:.3f}; error m 16 "
                  f"{layer['m16']:.4f}, m 4096 {layer['m4096']:.4f}, uniform "
                  f"{layer['uniform']:.4f}")
            if not (layer["m4096"] < 0.5 * layer["m16"]
                    and layer["m4096"] < layer["uniform"] / 3):
                failures.append(f"layer {i}: the error does not fall with m: {layer}")

        for name, layers in (("bert", [1, 2]), ("modernbert", [1, 4])):
            folder = os.path.join(work, name)
            os.makedirs(folder)
            distill_hf_test.make_teacher(name, folder)
            hf = report(favor_model, folder, texts, work, "--features", "64",
                        "--epsilon", "1e6")
            got = [layer["layer"] for layer in hf["layers"]]
            print(f"{name}: layers {got}")
            if got != layers:
                failures.append(f"{name}: layers {got}, not {layers}")
            check_flat(hf, name, failures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
