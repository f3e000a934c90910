#!/usr/bin/env python3
"""Rewrites a legacy Llama tokenizer.json as transformers writes it today.

Usage: non_legacy_llama.py <legacy tokenizer.json> <output>

transformers' LlamaConverter (convert_slow_tokenizer.py) writes the legacy
form with a Prepend("▁") + Replace(" ", "▁") normalizer and no
pre-tokenizer; with legacy=False it writes no normalizer and a Metaspace
pre-tokenizer instead (replacement "▁", prepend_scheme "first", split
false), the form of newer Llama and Mistral files. Vocabulary, merges,
added tokens and post-processor are kept as they are.
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        tokenizer = json.load(f)
    expected = [{"type": "Prepend", "prepend": "\u2581"},
                {"type": "Replace", "pattern": {"String": " "},
                 "content": "\u2581"}]
    if tokenizer["normalizer"].get("normalizers") != expected:
        sys.exit(f"{sys.argv[1]}: not a legacy Llama normalizer")
    tokenizer["normalizer"] = None
    tokenizer["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                                  "prepend_scheme": "first", "split": False}
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
