#!/usr/bin/python3
"""favor-server serving a repository of untouched Hugging Face folders.

Builds one folder per architecture (BertModel, RobertaModel,
XLMRobertaModel, NomicBertModel, ModernBertModel) as the hub lays them out:
config.json, model.safetensors with random weights in the architecture's
real names (hf_reference.py's cases, the vocabulary widened to the
tokenizer's), a real tokenizer.json (BERT-base-uncased's WordPiece,
GPT-2's byte-level BPE, a SentencePiece Unigram trained at test time, from
the tokenizer.References fixture) and sentence-transformers' files; plus
one broken folder whose tokenizer reaches past its vocabulary. Starts
favor-server on the repository and checks, over HTTP:
- every model answers POST /v1/embeddings with text, and each embedding
  equals the float64 reference (tests/model/hf/) run on the token ids that
  Favor's own Tokenize gives for the text, to 1e-5 relative; usage counts
  those tokens;
- nomic-embed's sentence-transformers prompts: /v1/embeddings with
  prompt_name "search_query" equals the reference on Tokenize's ids of
  the prompt and the text together, usage counting the prompt's tokens,
  and GetModel lists the prompts;
- GetModel lists the architecture's limits, and the broken folder's
  GetModel says that it failed to load, naming tokenizer.json and the
  vocabulary, while the others keep serving.

Usage: hf_serve_test.py SERVER TOKENIZER_REFERENCES
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_reference  # noqa: E402
from hf import sentence_transformers as st  # noqa: E402

PROMPTS = {"search_query": "search_query: ",
           "search_document": "search_document: "}
TEXTS = ["Hello world!", "Favor reads Hugging Face folders as they are.",
         "naïve café – 東京 🙂"]

# name: (hf_reference case, tokenizer file under TOKENIZER_REFERENCES).
SERVED = {
    "bert": ("bert_task_cls", "bert-base-uncased/tokenizer.json"),
    "roberta": ("roberta", "gpt2/tokenizer.json"),
    "xlm-roberta": ("xlm_roberta_task", "unigram/tokenizer.json"),
    "nomic-embed": ("nomic_bert", "bert-base-uncased/tokenizer.json"),
    "modernbert": ("modernbert", "gpt2/tokenizer.json"),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, path, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data,
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def vocabulary_size(tokenizer_path):
    with open(tokenizer_path, encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    ids = list(vocab.values()) if isinstance(vocab, dict) else [len(vocab) - 1]
    ids += [t["id"] for t in tok.get("added_tokens", [])]
    return max(ids) + 1


def build_folder(repository, name, case_name, tokenizer_path, vocab=None):
    """Writes the folder; returns (case, config, weights)."""
    case = dict(hf_reference.CASES[case_name])
    case["config"] = dict(case["config"])
    size = vocab or vocabulary_size(tokenizer_path)
    case["config"]["vocab_size"] = size
    case.pop("stored_vocab", None)
    case.pop("overlay", None)
    module = case["module"]
    base = hf_reference._SMALL if module is hf_reference.bert else {}
    config = dict(base, **case["config"])
    generator = torch.Generator().manual_seed(sum(map(ord, name)))
    # NomicBertModel pads its table to a multiple of pad_vocab_size_multiple.
    multiple = config.get("pad_vocab_size_multiple", 1)
    stored = dict(config, vocab_size=-(-size // multiple) * multiple)
    weights = hf_reference.draw(module.weight_shapes(stored), generator)
    folder = os.path.join(repository, name)
    hf_reference.write_folder(folder, case, config, weights, generator)
    shutil.copy(tokenizer_path, os.path.join(folder, "tokenizer.json"))
    if case["module"] is hf_reference.nomic_bert:
        hf_reference.write_json(
            os.path.join(folder, "config_sentence_transformers.json"),
            {"prompts": PROMPTS, "default_prompt_name": None,
             "similarity_fn_name": "cosine"})
    return case, config, weights


def expected_embedding(case, config, weights, ids):
    y = case["module"].forward(weights, config, torch.tensor(ids))
    settings = case.get("sentence_transformers") or {}
    vector = st.pool(y, settings.get("pooling", "mean"))
    return st.normalize(vector) if settings.get("normalize") else vector


def relative_error(actual, expected):
    actual = torch.tensor(actual, dtype=torch.float64)
    return float((actual - expected).abs().max() / expected.abs().max())


def check_prompt(port, name, built):
    case, config, weights = built
    prompt = PROMPTS["search_query"]
    status, tokenized = http(port, "/v1/favor/Tokenize",
                             {"model": name, "texts": [prompt + t for t in TEXTS]})
    assert status == 200, (name, status, tokenized)
    status, answer = http(port, "/v1/embeddings",
                          {"model": name, "input": TEXTS,
                           "prompt_name": "search_query",
                           "encoding_format": "float"})
    assert status == 200, (name, status, answer)
    tokens, worst = 0, 0.0
    for item, data in zip(tokenized["texts"], answer["data"]):
        ids = [int(i) for i in item["ids"]]
        tokens += len(ids)
        worst = max(worst, relative_error(
            data["embedding"], expected_embedding(case, config, weights, ids)))
    assert worst <= 1e-5, f"{name} with a prompt: off by {worst:.2e}"
    assert answer["usage"]["prompt_tokens"] == tokens, (answer["usage"], tokens)
    status, refused = http(port, "/v1/embeddings",
                           {"model": name, "input": TEXTS, "prompt_name": "x"})
    assert status == 400 and "search_query" in json.dumps(refused), refused
    print(f"ok {name} prompt_name: {tokens} tokens with the prompt, worst "
          f"relative error {worst:.2e}; an unknown name is a 400")


def wait_healthy(port, server):
    deadline = time.time() + 120
    while time.time() < deadline:
        assert server.poll() is None, "favor-server exited during start-up"
        try:
            if http(port, "/health", timeout=2)[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    raise AssertionError("GET /health never answered 200")


def check_model(port, name, built):
    case, config, weights = built
    status, tokenized = http(port, "/v1/favor/Tokenize",
                             {"model": name, "texts": TEXTS})
    assert status == 200, (name, status, tokenized)
    status, answer = http(port, "/v1/embeddings",
                          {"model": name, "input": TEXTS,
                           "encoding_format": "float"})
    assert status == 200, (name, status, answer)
    tokens = 0
    worst = 0.0
    for text, item, data in zip(TEXTS, tokenized["texts"], answer["data"]):
        ids = [int(i) for i in item["ids"]]
        assert ids, (name, text)
        tokens += len(ids)
        worst = max(worst, relative_error(
            data["embedding"], expected_embedding(case, config, weights, ids)))
    assert worst <= 1e-5, f"{name}: embeddings off by {worst:.2e}"
    assert answer["usage"]["prompt_tokens"] == tokens, (name, answer["usage"])
    status, model = http(port, "/v1/favor/GetModel", {"model": name})
    assert status == 200, (name, status, model)
    assert model["model"]["config"]["architecture"] == case.get(
        "runs_as", case["class"]), (name, model["model"]["config"])
    if case["module"] is hf_reference.nomic_bert:
        assert model["model"]["config"]["prompts"] == PROMPTS, model
        check_prompt(port, name, built)
    print(f"ok {name}: {len(TEXTS)} texts, {tokens} tokens, worst relative "
          f"error {worst:.2e}")


def main():
    server_binary, references = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as out:
        repository = os.path.join(out, "repository")
        built = {name: build_folder(repository, name, case,
                                    os.path.join(references, tokenizer))
                 for name, (case, tokenizer) in SERVED.items()}
        # GPT-2's ids reach 50256: a 1,000-row table cannot hold them.
        build_folder(repository, "too-small-vocabulary", "roberta",
                     os.path.join(references, "gpt2/tokenizer.json"), vocab=1000)
        http_port = free_port()
        log = open(os.path.join(out, "server.log"), "w+")
        server = subprocess.Popen(
            [server_binary, f"--model_repository={repository}",
             f"--port={free_port()}", "--metrics_port=0",
             f"--http_port={http_port}", "--default_model=bert"],
            stderr=log, text=True)
        try:
            wait_healthy(http_port, server)
            for name in SERVED:
                check_model(http_port, name, built[name])
            status, failed = http(http_port, "/v1/favor/GetModel",
                                  {"model": "too-small-vocabulary"})
            assert status != 200, failed
            message = json.dumps(failed)
            assert "tokenizer.json" in message and "vocab" in message, message
            print(f"ok too-small-vocabulary: HTTP {status}, {message[:200]}")
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=60) == 0, server.returncode
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            if sys.exc_info()[0] is not None:
                log.seek(0)
                sys.stderr.write(log.read()[-4000:])


if __name__ == "__main__":
    main()
