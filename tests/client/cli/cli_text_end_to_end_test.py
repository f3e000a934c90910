#!/usr/bin/python3
"""favor-cli with text against a real favor-server.

Two small random models made by favor-model at test time: "text", with a
WordPiece vocab.txt written here (the default model, first by name), and
"untokenized", token ids only. Checks, each through the binary's JSON and
exit code:
  - `embed "some text"` gives one embedding of the model's width, and the
    same values as the ids `tokenize` returns for that text (end to end:
    text in through gRPC equals the tokenizer's ids);
  - `tokenize` gives ids, tokens, byte offsets and special flags, with and
    without the special tokens, from arguments and from stdin;
  - JSON lines on stdin mixing text, ids and spans;
  - late chunking: each span's embedding is the mean of the per-token
    embeddings the same call returns, over the span's tokens;
  - --dimensions: the first N values of the unnormalised embedding,
    renormalised;
  - --truncation=chunk on a text over the model's 64 positions, and an
    overlap over the limit;
  - GetModel's tokenizer and text limits;
  - text to a model without a tokenizer (FAILED_PRECONDITION, exit 9), bad
    spans, text that is not UTF-8, bad usage;
  - with DEFAULT_MODEL_DIR: `favor-cli embed "some text"` against the
    build's default model (BERT-base-uncased's tokenizer, random weights),
    the issue's "done when", and README's Python example as written (stubs
    from protoc and grpc_python_plugin, python3-grpcio).

Usage: cli_text_end_to_end_test.py FAVOR_CLI FAVOR_SERVER FAVOR_MODEL
                                   [DEFAULT_MODEL_DIR]
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from favor_server_fixture import (TEXT_HIDDEN, WORD_PIECES, WORDS,  # noqa: E402
                                  FavorServer, expect_error, make_text_models,
                                  run)

INVALID_ARGUMENT, FAILED_PRECONDITION = 3, 9
HIDDEN = TEXT_HIDDEN
SENTENCE = "the cat sat on the mat"


def cli_json(cli, server, args, stdin=None):
    code, out, err = run([cli, "--endpoint=" + server.endpoint] + args,
                         stdin=stdin)
    assert code == 0, (args, code, err)
    assert err == "", err
    return json.loads(out)


def close(a, b, tolerance=1e-4):
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b)) < tolerance


def norm(values):
    return math.sqrt(sum(v * v for v in values))


def tokens_of(cli, server, text, extra=()):
    result = cli_json(cli, server, ["tokenize"] + list(extra) + [text])
    assert result["model"] == "text", result
    assert len(result["texts"]) == 1, result
    return result["texts"][0]


def check_tokenize(cli, server):
    tokens = tokens_of(cli, server, SENTENCE)
    assert tokens["tokens"] == ["[CLS]"] + SENTENCE.split() + ["[SEP]"], tokens
    assert tokens["ids"] == [WORD_PIECES.index(t) for t in tokens["tokens"]], tokens
    assert tokens["special"] == [True] + [False] * 6 + [True], tokens
    spans = list(zip(tokens["begin_offsets"], tokens["end_offsets"]))
    assert spans[0] == spans[-1] and spans[0][0] == spans[0][1], spans
    for (begin, end), token in zip(spans[1:-1], tokens["tokens"][1:-1]):
        assert SENTENCE.encode()[begin:end].decode() == token, (begin, end)
    bare = tokens_of(cli, server, "cats ran", ["--without_special_tokens"])
    assert bare["tokens"] == ["cat", "##s", "ran"], bare
    assert bare["begin_offsets"] == [0, 3, 5] and bare["end_offsets"] == [3, 4, 8]
    # Several texts as arguments; one text, the whole of stdin, offsets
    # counted in its bytes.
    two = cli_json(cli, server, ["tokenize", "the dog", "a cat"])
    assert [len(t["ids"]) for t in two["texts"]] == [4, 4], two
    whole = cli_json(cli, server, ["tokenize"], stdin="the\ndog ran\n")
    assert whole["texts"][0]["begin_offsets"][1:-1] == [0, 4, 8], whole


def check_text_equals_ids(cli, server):
    from_text = cli_json(cli, server, ["embed", SENTENCE])
    embedding = from_text["embeddings"][0]
    assert from_text["model"] == "text", from_text
    assert embedding["num_tokens"] == 8, embedding
    assert len(embedding["values"]) == HIDDEN
    assert abs(norm(embedding["values"]) - 1) < 1e-4, norm(embedding["values"])
    ids = tokens_of(cli, server, SENTENCE)["ids"]
    from_ids = cli_json(cli, server, ["embed", ",".join(map(str, ids))])
    assert close(from_ids["embeddings"][0]["values"], embedding["values"],
                 1e-5), "text and its ids embed differently"
    # --text reads text that starts with a digit; --ids forces ids.
    forced = cli_json(cli, server, ["embed", "--text", "7 cats"])
    assert forced["embeddings"][0]["num_tokens"] == 5, forced  # [UNK] cat ##s
    forced = cli_json(cli, server, ["embed", "--ids", "5 6"])
    assert forced["embeddings"][0]["num_tokens"] == 2, forced


def check_json_lines(cli, server):
    lines = "\n".join([
        json.dumps({"text": SENTENCE, "spans": [[0, 7]]}),
        json.dumps("a dog ran"),
        json.dumps({"token_ids": [2, 5, 6, 3]}),
        "then slept",
        "# a comment, then ids",
        "2 7 3",
    ]) + "\n"
    result = cli_json(cli, server, ["embed"], stdin=lines)
    assert [e["num_tokens"] for e in result["embeddings"]] == [8, 5, 4, 4, 3]
    assert len(result["embeddings"][0]["spans"]) == 1, result["embeddings"][0]
    assert "spans" not in result["embeddings"][1]


def check_late_chunking(cli, server):
    """Each span's embedding is the mean of the call's own token vectors over
    the span's tokens: "the cat" is positions 1-2, "sat on the" 3-5."""
    result = cli_json(cli, server, [
        "embed", "--spans=0:7,8:18", "--token_embeddings",
        "--normalization=none", SENTENCE])
    embedding = result["embeddings"][0]
    rows = embedding["token_embeddings"]
    assert rows["shape"] == [8, HIDDEN], rows["shape"]
    vectors = [rows["values"][i * HIDDEN:(i + 1) * HIDDEN] for i in range(8)]
    for span, positions in zip(embedding["spans"], ([1, 2], [3, 4, 5])):
        assert span["num_tokens"] == len(positions), span
        mean = [sum(vectors[p][d] for p in positions) / len(positions)
                for d in range(HIDDEN)]
        assert close(span["values"], mean), (positions, span["values"][:4],
                                             mean[:4])
    # Spans of ids are token positions.
    by_ids = cli_json(cli, server, ["embed", "--spans=1:3", "2,5,6,7,3"])
    assert by_ids["embeddings"][0]["spans"][0]["num_tokens"] == 2, by_ids
    expect_error([cli, "--endpoint=" + server.endpoint, "embed",
                  "--spans=3:3", SENTENCE], INVALID_ARGUMENT, "span")
    expect_error([cli, "--endpoint=" + server.endpoint, "embed",
                  "--spans=0:999", SENTENCE], INVALID_ARGUMENT, "span")
    expect_error([cli, "--endpoint=" + server.endpoint, "embed",
                  "--spans=0-5", SENTENCE], INVALID_ARGUMENT, "--spans")


def check_dimensions(cli, server):
    raw = cli_json(cli, server, ["embed", "--normalization=none", SENTENCE])
    first = raw["embeddings"][0]["values"][:8]
    short = cli_json(cli, server, ["embed", "--dimensions=8", SENTENCE])
    values = short["embeddings"][0]["values"]
    assert len(values) == 8, len(values)
    assert close(values, [v / norm(first) for v in first]), (values, first)
    for bad in ("--dimensions=33", "--dimensions=-1"):
        expect_error([cli, "--endpoint=" + server.endpoint, "embed", bad,
                      SENTENCE], INVALID_ARGUMENT, "dimensions")


def check_chunking(cli, server):
    long_text = " ".join(WORDS[:13] * 12)  # 156 words, over 64 positions
    endpoint = "--endpoint=" + server.endpoint
    expect_error([cli, endpoint, "embed", long_text], INVALID_ARGUMENT,
                 "max_tokens_per_input")
    chunked = cli_json(cli, server, ["embed", "--truncation=chunk",
                                     "--chunk_overlap_tokens=8", long_text])
    embedding = chunked["embeddings"][0]
    assert embedding["num_chunks"] >= 3, embedding["num_chunks"]
    assert len(embedding["values"]) == HIDDEN
    assert abs(norm(embedding["values"]) - 1) < 1e-4
    fits = cli_json(cli, server, ["embed", "--truncation=chunk", SENTENCE])
    assert fits["embeddings"][0]["num_chunks"] == 1, fits
    expect_error([cli, endpoint, "embed", "--truncation=chunk",
                  "--chunk_overlap_tokens=40", long_text], INVALID_ARGUMENT,
                 "chunk_overlap_tokens")


def check_model_info(cli, server):
    model = cli_json(cli, server, ["model", "text"])
    tokenizer = model["config"]["tokenizer"]
    assert tokenizer["kind"] == "wordpiece", tokenizer
    assert tokenizer["file"] == "vocab.txt", tokenizer
    roles = {t["role"]: (t["token"], t["id"]) for t in tokenizer["special_tokens"]}
    assert roles["cls"] == ("[CLS]", 2) and roles["sep"] == ("[SEP]", 3), roles
    assert model["limits"]["max_text_bytes_per_call"] > 0, model["limits"]
    assert model["limits"]["max_spans_per_input"] > 0, model["limits"]
    bare = cli_json(cli, server, ["model", "untokenized"])
    assert bare["config"]["tokenizer"]["kind"] == "", bare["config"]


def check_bad_text(cli, server):
    endpoint = "--endpoint=" + server.endpoint
    expect_error([cli, endpoint, "embed", "--model=untokenized", SENTENCE],
                 FAILED_PRECONDITION, "untokenized")
    expect_error([cli, endpoint, "tokenize", "--model=untokenized", SENTENCE],
                 FAILED_PRECONDITION, "untokenized")
    expect_error([cli, endpoint, "embed", "3 little pigs"], INVALID_ARGUMENT,
                 "give --text")
    # Not UTF-8 ("caf" and a lone 0xc3 byte, passed through the file system
    # encoding): refused by the client, naming the input and the offset.
    not_utf8 = os.fsdecode(b"caf\xc3")
    expect_error([cli, endpoint, "embed", not_utf8], INVALID_ARGUMENT,
                 "inputs[0].text is not valid UTF-8: invalid byte 0xc3 at byte "
                 "offset 3")
    expect_error([cli, endpoint, "tokenize", "fine", not_utf8],
                 INVALID_ARGUMENT, "texts[1] is not valid UTF-8")
    expect_error([cli, endpoint, "embed", "--text", "--ids", "x"],
                 INVALID_ARGUMENT, "not both")
    expect_error([cli, endpoint, "embed", ""], INVALID_ARGUMENT, "empty input")
    expect_error([cli, endpoint, "tokenize"], INVALID_ARGUMENT, "no input",
                 stdin="")
    code, out, _ = run([cli, "--help"])
    assert code == 0 and "tokenize" in out and "--dimensions" in out, out


def check_readme_python(server, tmp):
    """README's Quick start Python example, as written (stubs generated as it
    says), against `server` instead of 127.0.0.1:50051."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read()
    match = re.search(r"PYTHONPATH=/tmp/favor_py /usr/bin/python3 -c '(.*?)'\n",
                      readme, re.S)
    assert match, "README lost its Python example"
    stubs = os.path.join(tmp, "favor_py")
    os.makedirs(stubs)
    subprocess.run(["protoc", "-I" + os.path.join(root, "proto"),
                    "--python_out=" + stubs, "--grpc_python_out=" + stubs,
                    "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                    os.path.join(root, "proto/favor/v1/favor.proto")], check=True)
    code = match.group(1).replace("127.0.0.1:50051", server.endpoint)
    result = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True,
                            text=True, env=dict(os.environ, PYTHONPATH=stubs),
                            timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "default 256 6", lines  # [CLS] hello , world ! [SEP]
    assert lines[1] == str(["[CLS]", "hello", ",", "world", "!", "[SEP]"]), lines


def check_default_model(cli, binary, default_model, tmp):
    """`make serve` then `favor-cli embed "some text"`: the build's default
    model answers text, and README's Python example runs as written."""
    repository = os.path.join(tmp, "default-repository")
    shutil.copytree(default_model, os.path.join(repository, "default"))
    server = FavorServer(binary, repository, os.path.join(tmp, "default.log"))
    try:
        result = cli_json(cli, server, ["embed", "some text"])
        embedding = result["embeddings"][0]
        assert len(embedding["values"]) == 256, len(embedding["values"])
        assert embedding["num_tokens"] == 4, embedding  # [CLS] some text [SEP]
        tokens = cli_json(cli, server, ["tokenize", "Hello, world!"])
        assert tokens["texts"][0]["ids"] == [101, 7592, 1010, 2088, 999, 102]
        check_readme_python(server, tmp)
    except BaseException:
        print(server.log())
        raise
    finally:
        server.stop()


def main():
    cli, binary, favor_model = sys.argv[1:4]
    default_model = sys.argv[4] if len(sys.argv) > 4 else ""
    with tempfile.TemporaryDirectory() as tmp:
        repository = os.path.join(tmp, "models")
        make_text_models(favor_model, repository, tmp)
        server = FavorServer(binary, repository, os.path.join(tmp, "server.log"))
        try:
            check_tokenize(cli, server)
            check_text_equals_ids(cli, server)
            check_json_lines(cli, server)
            check_late_chunking(cli, server)
            check_dimensions(cli, server)
            check_chunking(cli, server)
            check_model_info(cli, server)
            check_bad_text(cli, server)
        except BaseException:
            print(server.log())
            raise
        finally:
            server.stop()
        if default_model:
            check_default_model(cli, binary, default_model, tmp)
    print("favor-cli text end-to-end test: OK")


if __name__ == "__main__":
    main()
