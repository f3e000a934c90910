#!/usr/bin/env python3
"""SentencePiece references for sentencepiece_parity_test.

Usage: sentencepiece_reference.py <corpus.txt> <out dir>

Writes a training text, trains two small models on it with Debian's spm_train
(unigram and BPE), and encodes every corpus string with Debian's
python3-sentencepiece: <out>/<type>.model and <out>/<type>_reference.jsonl,
one {"ids", "pieces", "offsets"} line per string, offsets in UTF-8 bytes.
"""
import json
import os
import subprocess
import sys

import sentencepiece

WORDS = ("the quick brown fox jumps over the lazy dog while tokenizers split "
         "text into pieces and models embed them into vectors for search "
         "naïve café résumé Straße Ελλάδα Москва 東京 서울 مرحبا שלום "
         "สวัสดี 😀 👍🏽").split()


def training_text(corpus_strings):
    """Deterministic sentences plus the corpus's printable lines."""
    lines = []
    for i in range(2000):
        lines.append(" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)]
                              for j in range(3 + i % 11)))
    lines.extend(s.replace("\n", " ") for s in corpus_strings
                 if s.isprintable() and s.strip())
    return "\n".join(lines) + "\n"


def read_corpus(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().split("\n")
                if line and not line.startswith("#")]


def byte_offsets(text):
    """Byte offset of each code point index of `text`, and of its end."""
    offsets = [0]
    for ch in text:
        offsets.append(offsets[-1] + len(ch.encode("utf-8")))
    return offsets


def encode_all(model_path, strings):
    processor = sentencepiece.SentencePieceProcessor(model_file=model_path)
    out = []
    for text in strings:
        proto = processor.encode_as_immutable_proto(text)
        # The Python binding reports code point offsets (it converts the
        # library's byte offsets to Unicode spans): back to bytes here.
        to_bytes = byte_offsets(text)
        out.append({"ids": [p.id for p in proto.pieces],
                    "pieces": [processor.id_to_piece(p.id)
                               for p in proto.pieces],
                    "offsets": [[to_bytes[p.begin], to_bytes[p.end]]
                                for p in proto.pieces]})
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    strings = read_corpus(sys.argv[1])
    out_dir = sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    train_path = os.path.join(out_dir, "train.txt")
    with open(train_path, "w", encoding="utf-8") as f:
        f.write(training_text(strings))
    for model_type in ("unigram", "bpe"):
        prefix = os.path.join(out_dir, model_type)
        subprocess.run(["spm_train", f"--input={train_path}",
                        f"--model_prefix={prefix}", "--vocab_size=2000",
                        "--character_coverage=0.998",
                        "--hard_vocab_limit=false",
                        f"--model_type={model_type}", "--num_threads=2",
                        "--minloglevel=2"], check=True)
        with open(prefix + "_reference.jsonl", "w", encoding="utf-8") as f:
            for line in encode_all(prefix + ".model", strings):
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"sentencepiece_reference: {len(strings)} strings, 2 models in "
          f"{out_dir}")


if __name__ == "__main__":
    main()
