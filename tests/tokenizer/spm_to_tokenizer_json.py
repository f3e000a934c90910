#!/usr/bin/env python3
"""Writes a SentencePiece Unigram .model as an XLM-RoBERTa-style tokenizer.json.

Usage: spm_to_tokenizer_json.py [--without-whitespace-stages] <model> <tokenizer.json>

--without-whitespace-stages leaves Strip and Replace out (the normalizer is
Precompiled alone), the form this script wrote before Favor read Regex
patterns, which the fuzz seeds made then still hold (tests/fuzz/make_seeds.py).

The pipeline is the one Hugging Face's transformers builds for XLM-R
(convert_slow_tokenizer.py, XLMRobertaConverter on SpmConverter), written
here from reading it:
  - the vocabulary is fairseq's: <s> <pad> </s> <unk> first, then the
    model's pieces from id 3 on (SentencePiece's own <unk> <s> </s> are ids
    0..2 and are replaced), then <mask>; so a SentencePiece id i >= 3 is
    tokenizer.json id i + 1, and unk is id 3;
  - model: Unigram with each piece's score and unk_id 3;
  - normalizer: a Sequence of Precompiled (the model's own
    precompiled_charsmap, base64), Strip (right only) and Replace of the
    Regex " {2,}" by "▁", SpmConverter.normalizer's stages, which emulate
    SentencePiece's remove_extra_whitespaces;
  - pre-tokenizer: Metaspace, replacement "▁", prepend_scheme "always",
    split on it;
  - post-processor: TemplateProcessing <s> $A </s> (pair <s> $A </s> </s> $B
    </s>), and the five special tokens as added tokens (<mask> with lstrip,
    as XLM-R's).
"""
import base64
import json
import sys

from sentencepiece import sentencepiece_model_pb2

UNIGRAM = 1  # TrainerSpec.ModelType
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
UNK_ID = 3


def load(path):
    proto = sentencepiece_model_pb2.ModelProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    if proto.trainer_spec.model_type != UNIGRAM:
        sys.exit(f"{path}: not a Unigram model")
    if [p.piece for p in proto.pieces[:3]] != ["<unk>", "<s>", "</s>"]:
        sys.exit(f"{path}: ids 0..2 must be <unk> <s> </s> (spm_train's "
                 "default), as in XLM-R's sentencepiece.bpe.model")
    return proto


def added_token(content, token_id):
    return {"id": token_id, "content": content, "single_word": False,
            "lstrip": content == "<mask>", "rstrip": False,
            "normalized": False, "special": True}


def template(pair):
    def special(token):
        return {"SpecialToken": {"id": token, "type_id": 0}}

    def sequence(name):
        return {"Sequence": {"id": name, "type_id": 0}}
    single = [special("<s>"), sequence("A"), special("</s>")]
    if not pair:
        return single
    return single + [special("</s>"), sequence("B"), special("</s>")]


def normalizer(charsmap, whitespace_stages):
    precompiled = {"type": "Precompiled",
                   "precompiled_charsmap":
                       base64.b64encode(charsmap).decode("ascii")}
    if not whitespace_stages:
        return precompiled
    return {"type": "Sequence", "normalizers": [
        precompiled,
        {"type": "Strip", "strip_left": False, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": " {2,}"},
         "content": "\u2581"}]}


def convert(proto, whitespace_stages=True):
    vocab = [[token, 0.0] for token in SPECIALS]
    vocab += [[p.piece, p.score] for p in proto.pieces[3:]]
    vocab.append(["<mask>", 0.0])
    ids = {token: i for i, (token, _) in enumerate(vocab)}
    charsmap = proto.normalizer_spec.precompiled_charsmap
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(t, ids[t]) for t in SPECIALS + ["<mask>"]],
        "normalizer": normalizer(charsmap, whitespace_stages),
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "always", "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": template(pair=False),
            "pair": template(pair=True),
            "special_tokens": {
                t: {"id": t, "ids": [ids[t]], "tokens": [t]}
                for t in ("<s>", "</s>")}},
        "decoder": {"type": "Metaspace", "replacement": "\u2581",
                    "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": UNK_ID, "vocab": vocab,
                  "byte_fallback": False},
    }


def main():
    args = sys.argv[1:]
    whitespace_stages = "--without-whitespace-stages" not in args
    args = [a for a in args if a != "--without-whitespace-stages"]
    if len(args) != 2:
        sys.exit(__doc__)
    converted = convert(load(args[0]), whitespace_stages)
    with open(args[1], "w", encoding="utf-8") as f:
        json.dump(converted, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
