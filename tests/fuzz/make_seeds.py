#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, tests/fuzz/<target>_corpus/.

Usage: tests/fuzz/make_seeds.py   (from anywhere; needs protoc and spm_train)

The seeds are committed; this script says how they were made and remakes
them. Regression inputs (named regression-*) are committed by hand beside
them and are never removed by it.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write(target, name, data):
    folder = os.path.join(HERE, target + "_corpus")
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def fdp_string(text):
    """FuzzedDataProvider.ConsumeRandomLengthString's escaped form."""
    if isinstance(text, str):
        text = text.encode()
    return text.replace(b"\\", b"\\\\") + b"\\x"


# ---- safetensors ----
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(count, start=0.0):
    return struct.pack("<%df" % count, *[start + i for i in range(count)])


def safetensors_seeds():
    write("safetensors_fuzz", "empty", safetensors([]))
    write("safetensors_fuzz", "two", safetensors(
        [("a", "F32", [2, 2], f32(4)), ("b", "BF16", [3], b"\x80\x3f" * 3)],
        {"format": "pt"}))
    write("safetensors_fuzz", "expected", safetensors(
        [("embeddings.word_embeddings.weight", "F32", [16, 8], f32(128)),
         ("pooler.query", "F16", [8], b"\x00\x3c" * 8)]))
    write("safetensors_fuzz", "scalar", safetensors(
        [("s", "F32", [], f32(1)), ("z", "F16", [0, 4], b"")]))


# ---- model config ----
DEFAULT_CONFIG = {
    "version": "seed", "vocab_size": 30522, "type_vocab_size": 2,
    "pad_token_id": 0, "unk_token_id": 100, "cls_token_id": 101,
    "sep_token_id": 102, "mask_token_id": 103, "hidden_size": 256,
    "num_hidden_layers": 4, "num_attention_heads": 4,
    "intermediate_size": 1024, "hidden_act": "gelu", "norm": "layer_norm",
    "norm_placement": "post", "layer_norm_eps": 1e-12,
    "position_embedding_type": "rotary", "max_position_embeddings": 1048576,
    "rotary_base": 10000.0, "max_sequence_length": 1048576,
    "attention": {"kernel": "favor+", "num_random_features": 256,
                  "orthogonal": True, "simplex": False, "row_norm": "chi",
                  "projection_seed": 0, "causal": False,
                  "feature_epsilon": 0.0001},
    "block": "encoder", "num_latents": 0, "num_inducing_points": 0,
    "pooling": "mean", "normalize": True,
    "tokenizer": {"file": "tokenizer.json", "lowercase": True,
                  "strip_accents": "as_lowercase",
                  "handle_chinese_chars": True, "clean_text": True,
                  "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "cls_token": "[CLS]",
                  "sep_token": "[SEP]", "pad_token": "[PAD]",
                  "mask_token": "[MASK]", "add_bos": False, "add_eos": False},
}


def model_config_seeds():
    write("model_config_fuzz", "default", json.dumps(DEFAULT_CONFIG, indent=1))
    bert = {"vocab_size": 30522, "hidden_size": 768,
            "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "max_position_embeddings": 512,
            "attention": {"kernel": "softmax"}}
    write("model_config_fuzz", "bert", json.dumps(bert))
    cross = dict(DEFAULT_CONFIG, block="cross_attention", num_latents=4,
                 pooling="attention", tokenizer={"file": "vocab.txt"})
    write("model_config_fuzz", "cross_attention", json.dumps(cross))
    isab = dict(DEFAULT_CONFIG, block="isab", num_inducing_points=8,
                norm="scale_norm", norm_placement="pre",
                position_embedding_type="absolute",
                max_position_embeddings=512, max_sequence_length=512,
                tokenizer={"file": "spm.model", "add_bos": True})
    write("model_config_fuzz", "isab", json.dumps(isab))


# ---- tokenizers ----
TOKENIZER_JSON = open(os.path.join(
    ROOT, "tests/tokenizer/load_tokenizer_test.cc")).read().split(
    'constexpr char kTokenizerJson[] = R"(')[1].split(')";')[0]
VOCAB_TXT = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\n##ing\n" \
            "the\nquick\nbrown\nfox\n.\n,\n日\n本\né\n"
TEXTS = ["Hello worlds!", "The quick brown fox, jumping.", "日本語 café",
         "  spaces\tand\nnewlines  ", "\u00e9\u0301 combining", "a\\b"]


def train_spm(folder, model_type):
    text = os.path.join(folder, "train.txt")
    with open(text, "w") as f:
        for i in range(200):
            f.write("the quick brown fox jumps over the lazy dog %d. " % i)
            f.write("hello world, café 日本語.\n")
    prefix = os.path.join(folder, model_type)
    subprocess.run(["spm_train", "--input=" + text, "--model_prefix=" + prefix,
                    "--vocab_size=60", "--model_type=" + model_type,
                    "--normalization_rule_name=identity",
                    "--character_coverage=1.0", "--minloglevel=2"],
                   check=True, capture_output=True)
    with open(prefix + ".model", "rb") as f:
        return f.read()


def byte_level_alphabet():
    """GPT-2's byte → printable character table."""
    printable = (list(range(ord("!"), ord("~") + 1)) +
                 list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
                 list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def added(tokens, first_id=0):
    return [{"id": first_id + i, "content": t, "single_word": False,
             "lstrip": t == "<mask>", "rstrip": False, "normalized": False,
             "special": True} for i, t in enumerate(tokens)]


def byte_level_bpe_json():
    """RoBERTa-style: ByteLevel pre-tokenizer, BPE, RobertaProcessing."""
    merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("o", "x"),
              ("\u0120f", "ox"), ("\u0120", "f"), ("\u00c3", "\u00a9"),
              ("c", "a"), ("ca", "f"), ("caf", "\u00c3\u00a9")]
    vocab = {t: i for i, t in enumerate(SPECIALS)}
    for piece in byte_level_alphabet() + [a + b for a, b in merges]:
        vocab.setdefault(piece, len(vocab))
    vocab["<mask>"] = len(vocab)
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added(SPECIALS) + added(["<mask>"], len(vocab) - 1),
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2],
                           "cls": ["<s>", 0], "trim_offsets": True,
                           "add_prefix_space": False},
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [" ".join(m) for m in merges]}},
        ensure_ascii=False)


def metaspace_bpe_json():
    """Newer Llama/Mistral style: Metaspace (first, no split), BPE with
    byte fallback, <s> from TemplateProcessing."""
    merges = [("\u2581", "t"), ("h", "e"), ("\u2581t", "he"), ("o", "x"),
              ("\u2581", "f"), ("\u2581f", "ox"), ("\u2581", "\u2581")]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for byte in range(256):
        vocab["<0x%02X>" % byte] = len(vocab)
    for piece in ["\u2581", "t", "h", "e", "o", "x", "f", "q", "u", "i", "c",
                  "k", "\u65e5", "\u00e9"] + [a + b for a, b in merges]:
        vocab.setdefault(piece, len(vocab))
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added(["<unk>", "<s>", "</s>"]),
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "first", "split": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                       "tokens": ["<s>"]}}},
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True,
                  "byte_fallback": True, "vocab": vocab,
                  "merges": [list(m) for m in merges]}},
        ensure_ascii=False)


def split_regex_bpe_json():
    """Llama 3 style: a Split of tiktoken's Regex (Isolated), a Split of a
    String (MergedWithNext, inverted), then ByteLevel without its own
    regex; a Regex Replace before NFC in the normalizer. GPT-2's alphabet
    and byte_level_bpe_json's merges."""
    llama3 = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
              "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
              "\\s+(?!\\S)|\\s+")
    file = json.loads(byte_level_bpe_json())
    file["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        {"type": "NFC"}]}
    file["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": llama3},
         "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"String": "ox"},
         "behavior": "MergedWithNext", "invert": True},
        {"type": "ByteLevel", "add_prefix_space": False,
         "trim_offsets": True, "use_regex": False}]}
    return json.dumps(file, ensure_ascii=False)


def unigram_json(folder):
    """XLM-R style (tests/tokenizer/spm_to_tokenizer_json.py) from a tiny
    Unigram model whose normalisation rules are a few lines, so that the
    Precompiled charsmap stays small enough to mutate."""
    rules = os.path.join(folder, "rules.tsv")
    with open(rules, "w") as f:
        # Source and target code points in hex, as spm_train reads them.
        f.write("41\t61\n42\t62\nFF21\t61\n65 301\tE9\n3000\t20\n"
                "FB01\t66 69\n")
    text = os.path.join(folder, "unigram_train.txt")
    with open(text, "w") as f:
        for i in range(200):
            f.write("the quick brown fox %d café fine 日本語.\n" % i)
    prefix = os.path.join(folder, "xlmr")
    subprocess.run(["spm_train", "--input=" + text, "--model_prefix=" + prefix,
                    "--vocab_size=60", "--model_type=unigram",
                    "--normalization_rule_tsv=" + rules,
                    "--remove_extra_whitespaces=false",
                    "--character_coverage=1.0", "--minloglevel=2"],
                   check=True, capture_output=True)
    out = os.path.join(folder, "xlmr.json")
    subprocess.run([sys.executable, os.path.join(
        ROOT, "tests/tokenizer/spm_to_tokenizer_json.py"),
        "--without-whitespace-stages", prefix + ".model", out], check=True)
    with open(out, "rb") as f:
        return f.read()


def tokenizer_seeds():
    files = [(0, "json", TOKENIZER_JSON.encode()), (1, "vocab", VOCAB_TXT.encode()),
             (0, "json_byte_level_bpe", byte_level_bpe_json().encode()),
             (0, "json_metaspace_bpe", metaspace_bpe_json().encode()),
             (0, "json_split_regex_bpe", split_regex_bpe_json().encode())]
    with tempfile.TemporaryDirectory() as folder:
        files.append((2, "spm_unigram", train_spm(folder, "unigram")))
        files.append((2, "spm_bpe", train_spm(folder, "bpe")))
        files.append((0, "json_unigram", unigram_json(folder)))
    for format_byte, name, data in files:
        for i, text in enumerate(TEXTS):
            write("tokenizer_fuzz", "%s_%d" % (name, i),
                  fdp_string(text) + data + bytes([format_byte]))


# ---- requests, through protoc --encode ----
def encode(message, text):
    return subprocess.run(
        ["protoc", "--proto_path=" + os.path.join(ROOT, "proto"),
         "--encode=favor.v1." + message, "favor/v1/favor.proto"],
        input=text.encode(), check=True, capture_output=True).stdout


EMBEDS = {
    "ids": 'inputs { token_ids: [2, 5, 6, 3] }',
    "text": 'inputs { text: "the quick brown fox" } pooling: POOLING_CLS',
    "spans": 'inputs { text: "the quick brown fox jumps over" '
             'spans { begin: 0 end: 9 } spans { begin: 10 end: 19 } } '
             'include_token_embeddings: true',
    "chunk": 'inputs { text: "the quick brown fox jumps over the lazy dog '
             'the quick brown fox jumps over the lazy dog" } '
             'truncation: TRUNCATION_CHUNK chunk_overlap_tokens: 2',
    "truncate": 'inputs { token_ids: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,'
                '16,17,18,19,20] } truncation: TRUNCATION_LEFT dimensions: 4',
    "ids_only": 'model: "ids-only" inputs { token_ids: [7] } '
                'normalization: NORMALIZATION_L2',
}


def request_seeds():
    for name, text in EMBEDS.items():
        write("embed_request_fuzz", name, encode("EmbedRequest", text))
        write("embed_stream_fuzz", name, encode(
            "EmbedStreamRequest",
            'request_id: "r-%s" timeout_micros: 1000 request { %s }'
            % (name, text)))
    q = '{ shape: [1, 2, 3, 4] dtype: DTYPE_FLOAT32 data: "%s" }' % (
        "\\000" * 96)
    attends = {
        "favor": 'query %s key %s value %s' % (q, q, q),
        "softmax_causal": 'query %s key %s value %s kernel: "softmax" '
                          'causal: true' % (q, q, q),
        "matrix": 'query %s key %s value %s projection_matrix { shape: [2, 4] '
                  'dtype: DTYPE_FLOAT32 data: "%s" }' % (q, q, q, "\\000" * 32),
        "mask": 'query %s key %s value %s key_padding_mask: [true, false, '
                'false] num_random_features: 16 kernel: "relu"' % (q, q, q),
    }
    half = '{ shape: [1, 1, 2, 2] dtype: DTYPE_BFLOAT16 data: "%s" }' % (
        "\\000\\077" * 4)
    attends["bf16"] = 'query %s key %s value %s kernel: "trig"' % (
        half, half, half)
    for name, text in attends.items():
        write("attend_request_fuzz", name, encode("AttendRequest", text))


# ---- HTTP ----
def http(method, target, body=b"", headers=()):
    lines = ["%s %s HTTP/1.1" % (method, target), "Host: localhost",
             "Authorization: Bearer fuzz-key"] + list(headers)
    if body:
        lines += ["Content-Type: application/json",
                  "Content-Length: %d" % len(body)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def http_seeds():
    embed_response = encode(
        "EmbedResponse", 'model: "default" embeddings { values: [0.5, -1, 2] '
        'num_tokens: 3 }')
    models = encode("ListModelsResponse",
                    'models { name: "default" } default_model: "default"')
    cases = {
        "embeddings": (embed_response, http(
            "POST", "/v1/embeddings", b'{"input": "hello world"}')),
        "embeddings_tokens": (embed_response, http(
            "POST", "/v1/embeddings",
            b'{"input": [[1, 2], [3]], "encoding_format": "base64", '
            b'"dimensions": 2, "model": "default"}')),
        "models": (models, http("GET", "/v1/models")),
        "health": (b"", http("GET", "/health")),
        "favor_embed": (embed_response, http(
            "POST", "/v1/favor/Embed",
            b'{"inputs": [{"text": "hi"}], "pooling": "POOLING_CLS"}',
            ["X-Request-Timeout: 2.5"])),
        "favor_tokenize": (b"", http(
            "POST", "/v1/favor/Tokenize", b'{"texts": ["hi"]}',
            ["X-Request-Timeout: 500ms"])),
        "unknown": (b"", http("GET", "/nowhere")),
        "request_ids": (embed_response, http(
            "POST", "/v1/embeddings", b'{"input": "hello world"}',
            ["X-Request-Id: fuzz-1",
             "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-"
             "00f067aa0ba902b7-01"])),
        "info": (encode("GetModelResponse",
                        'model { name: "default" dtype: "float32" '
                        'limits { max_tokens_per_input: 512 } config { '
                        'attention { kernel: "favor+" num_features: 256 } } }'),
                 http("GET", "/info?model=def%61ult")),
        "embedding_types": (encode(
            "EmbedResponse", 'model: "default" embeddings { values: [0.5, -1] '
            'quantized { int8: "\\001\\377" uint8: "\\200\\000" '
            'binary: "\\000" ubinary: "\\200" } num_tokens: 9 '
            'num_truncated_tokens: 4 } num_tokens: 9'), http(
            "POST", "/v1/embeddings",
            b'{"input": ["a b c"], "embedding_types": ["float", "int8", '
            b'"uint8", "binary", "ubinary"], "encoding_format": "base64", '
            b'"truncate": true, "truncation_direction": "Left"}')),
        "late_chunking": (encode(
            "EmbedResponse", 'model: "default" embeddings { values: [1] '
            'spans { values: [0.5] num_tokens: 2 quantized { int8: "\\177" } } '
            'spans { values: [-0.5] num_tokens: 1 } num_tokens: 5 } '
            'num_tokens: 5'), http(
            "POST", "/v1/embeddings",
            b'{"input": ["first chunk", "second"], "late_chunking": true, '
            b'"embedding_types": ["int8"]}')),
    }
    for name, (answer, request) in cases.items():
        write("http_request_fuzz", name,
              fdp_string(answer) + fdp_string(b"") + request + b"\x00")
    write("http_request_fuzz", "open_embed",
          fdp_string(embed_response) + fdp_string(b"") +
          http("POST", "/v1/embeddings", b'{"input": ["a", "b"]}',
               ["Authorization: Bearer anything"]) + b"\x11")
    write("http_request_fuzz", "busy",
          fdp_string("queue full") + fdp_string("250") +
          http("POST", "/v1/embeddings", b'{"input": "x"}') + b"\x08")


if __name__ == "__main__":
    safetensors_seeds()
    model_config_seeds()
    tokenizer_seeds()
    request_seeds()
    http_seeds()
