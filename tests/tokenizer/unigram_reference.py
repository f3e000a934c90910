#!/usr/bin/env python3
"""An XLM-R-style Unigram tokenizer.json and python3-sentencepiece's ids.

Usage: unigram_reference.py <training text> <parity strings> <out dir>

Trains a Unigram model with Debian's spm_train (<out>/unigram.model, with
spm_train's defaults for whitespace: runs collapsed, ends stripped, which
the converted Strip and Replace stages emulate), writes
it as <out>/tokenizer.json (spm_to_tokenizer_json.py), and writes
<out>/spm_ids.jsonl: one {"ids": [...]} line per string, SentencePiece's
encoding in tokenizer.json's ids (fairseq's offset: id + 1, <unk> 3) framed
by <s> (0) and </s> (2), as XLM-R's post-processor frames it.
"""
import json
import os
import subprocess
import sys

import sentencepiece

HERE = os.path.dirname(os.path.abspath(__file__))
BOS, EOS, UNK = 0, 2, 3


def read_strings(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().split("\n")
                if line and not line.startswith("#")]


def to_tokenizer_json_id(spm_id, processor):
    if processor.is_unknown(spm_id):
        return UNK
    if spm_id < 3:
        sys.exit(f"SentencePiece gave control id {spm_id}")
    return spm_id + 1


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    train, strings_path, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    prefix = os.path.join(out, "unigram")
    subprocess.run(["spm_train", f"--input={train}", f"--model_prefix={prefix}",
                    "--vocab_size=2000", "--character_coverage=0.998",
                    "--hard_vocab_limit=false", "--model_type=unigram",
                    "--num_threads=2",
                    "--minloglevel=2"], check=True)
    subprocess.run([sys.executable, os.path.join(HERE, "spm_to_tokenizer_json.py"),
                    prefix + ".model", os.path.join(out, "tokenizer.json")],
                   check=True)
    processor = sentencepiece.SentencePieceProcessor(model_file=prefix + ".model")
    strings = read_strings(strings_path)
    with open(os.path.join(out, "spm_ids.jsonl"), "w", encoding="utf-8") as f:
        for text in strings:
            ids = [to_tokenizer_json_id(i, processor)
                   for i in processor.encode(text)]
            f.write(json.dumps({"ids": [BOS] + ids + [EOS]}) + "\n")
    print(f"unigram_reference: {len(strings)} strings in {out}")


if __name__ == "__main__":
    main()
