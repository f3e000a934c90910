#!/usr/bin/python3
"""Text through the real favor-server, against independent implementations.

Starts favor-server (Python's grpcio as the client, stubs generated as
python_peer_test.py does) on a repository holding the default model
(BERT-base-uncased's WordPiece tokenizer.json, random weights), a model with
learned positions bounded to 64 tokens and the same tokenizer, and a model
without a tokenizer, then checks:
  - Tokenize's ids, tokens and byte offsets equal those of Hugging Face's
    Rust tokenizers (npm `tokenizers`) on every string of
    tests/tokenizer/corpus.txt (the tokenizer.References fixture wrote them);
  - text in gives the same embedding as the reference's ids for that text;
  - late-chunked spans (byte ranges) give the mean of the returned
    per-token embeddings over the tokens the span overlaps, computed here
    with numpy from the reference's offsets, on short texts and on a long
    document; under L2 the span is that mean renormalised;
  - Matryoshka dimensions: the first N values of the raw embedding,
    renormalised;
  - TRUNCATION_CHUNK (text and ids): the windows embedded one by one as
    token ids, framed with [CLS] and [SEP], averaged by their token counts;
  - GetModel's tokenizer and text limits (--max_text_bytes_per_call), the
    bad inputs' codes and messages, favor_tokenization_duration_seconds.

Usage: text_peer_test.py SERVER FAVOR_MODEL DEFAULT_MODEL_DIR PROTO_ROOT
       CORPUS REFERENCES_DIR
Needs Debian's python3-grpcio, python3-protobuf and python3-numpy.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_peer_test as peer  # noqa: E402  (stubs, ports, health)

TEXT_BYTE_LIMIT = 200000
CLS, SEP = 101, 102


def read_corpus(corpus, references):
    strings = [json.loads(line) for line in open(corpus, encoding="utf-8")
               if line.strip() and not line.startswith("#")]
    refs = [json.loads(line) for line in open(references, encoding="utf-8")]
    assert len(strings) == len(refs), (len(strings), len(refs))
    return strings, refs


def make_repository(favor_model, default_model, out):
    repo = os.path.join(out, "repo")
    os.makedirs(repo)
    os.symlink(os.path.abspath(default_model), os.path.join(repo, "default"))
    shape = ["--layers", "2", "--hidden", "64", "--heads", "4", "--ffn", "128",
             "--features", "32", "--seed", "3"]
    subprocess.run([favor_model, "init", "--output",
                    os.path.join(repo, "bounded"), "--position", "absolute",
                    "--max_sequence_length", "64", "--tokenizer",
                    os.path.join(default_model, "tokenizer.json")] + shape,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([favor_model, "init", "--output",
                    os.path.join(repo, "ids_only")] + shape,
                   check=True, stdout=subprocess.DEVNULL)
    return repo


def tokens_of_span(ref, begin, end):
    """Positions of the reference's tokens whose non-empty byte ranges
    overlap [begin, end), special tokens excluded."""
    return [t for t, (b, e) in enumerate(ref["offsets"])
            if e > b and b < end and e > begin]


def rows(tensor):
    data = np.frombuffer(tensor.data, dtype="<f4")
    return data.reshape(tensor.shape[0], tensor.shape[1])


def normalize(v):
    return v / max(np.linalg.norm(v), 1e-12)


def close(a, b, what, tolerance=2e-4):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    error = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)
    assert error <= tolerance, (what, error)


def check_tokenize(stub, pb, strings, refs):
    for start in range(0, len(strings), 500):
        batch = strings[start:start + 500]
        answer = stub.Tokenize(pb.TokenizeRequest(texts=batch), timeout=120)
        for i, got in enumerate(answer.texts):
            ref = refs[start + i]
            assert list(got.ids) == ref["ids"], (batch[i], list(got.ids))
            assert list(got.tokens) == ref["tokens"], batch[i]
            offsets = [list(p) for p in zip(got.begin_offsets, got.end_offsets)]
            assert offsets == ref["offsets"], (batch[i], offsets)
            assert list(got.special) == [
                t in ("[CLS]", "[SEP]") and o == [0, 0]
                for t, o in zip(ref["tokens"], ref["offsets"])], batch[i]
    print("Tokenize: %d strings match the Rust tokenizers" % len(strings))


def check_text_is_its_ids(stub, pb, strings, refs):
    picked = list(range(0, len(strings), 19))
    none = pb.NORMALIZATION_NONE
    by_text = stub.Embed(pb.EmbedRequest(
        inputs=[pb.EmbedInput(text=strings[i]) for i in picked],
        normalization=none), timeout=120)
    by_ids = stub.Embed(pb.EmbedRequest(
        inputs=[pb.EmbedInput(token_ids=refs[i]["ids"]) for i in picked],
        normalization=none), timeout=120)
    for k, i in enumerate(picked):
        assert by_text.embeddings[k].num_tokens == len(refs[i]["ids"])
        close(by_text.embeddings[k].values, by_ids.embeddings[k].values,
              strings[i])
    print("Embed: text equals the reference's ids on %d strings" % len(picked))


def sentence_spans(text):
    """Byte ranges of the sentences of `text` (ends at '.', '!' or '?')."""
    data, spans, begin = text.encode("utf-8"), [], 0
    for match in re.finditer(rb"[.!?](\s|$)", data):
        spans.append((begin, match.end(0)))
        begin = match.end(0)
    if begin < len(data):
        spans.append((begin, len(data)))
    return [(b, e) for b, e in spans if data[b:e].strip()]


def check_spans(stub, pb, text, ref, spans):
    request = pb.EmbedRequest(
        inputs=[pb.EmbedInput(text=text, spans=[pb.Span(begin=b, end=e)
                                                for b, e in spans])],
        include_token_embeddings=True, normalization=pb.NORMALIZATION_NONE)
    raw = stub.Embed(request, timeout=300).embeddings[0]
    token_rows = rows(raw.token_embeddings)
    assert token_rows.shape[0] == len(ref["ids"])
    request.normalization = pb.NORMALIZATION_L2
    unit = stub.Embed(request, timeout=300).embeddings[0]
    for j, (begin, end) in enumerate(spans):
        covered = tokens_of_span(ref, begin, end)
        assert raw.spans[j].num_tokens == len(covered), (j, begin, end)
        mean = token_rows[covered[0]:covered[-1] + 1].mean(axis=0)
        close(raw.spans[j].values, mean, ("span", j))
        close(unit.spans[j].values, normalize(mean), ("L2 span", j))
    return len(spans)


def check_late_chunking(stub, pb, strings, refs, tokenize):
    count = 0
    for i in range(0, len(strings), 97):
        data = strings[i].encode("utf-8")
        if len(refs[i]["ids"]) < 4:
            continue
        spans = [(0, len(data)), (len(data) // 3, len(data))]
        spans = [s for s in spans if tokens_of_span(refs[i], *s)]
        count += check_spans(stub, pb, strings[i], refs[i], spans)
    # A long document: the prose of the corpus, one sentence a span.
    document = " ".join(s for s in strings[:60])
    ref = tokenize(document)
    count += check_spans(stub, pb, document, ref, sentence_spans(document))
    print("late chunking: %d spans equal the mean of their token rows "
          "(document of %d tokens)" % (count, len(ref["ids"])))


def check_dimensions(stub, pb, strings):
    text = pb.EmbedInput(text=strings[5])
    full = stub.Embed(pb.EmbedRequest(
        inputs=[text], normalization=pb.NORMALIZATION_NONE), timeout=60)
    cut = stub.Embed(pb.EmbedRequest(
        inputs=[text], dimensions=32, normalization=pb.NORMALIZATION_L2),
        timeout=60)
    assert len(cut.embeddings[0].values) == 32
    close(cut.embeddings[0].values,
          normalize(np.array(full.embeddings[0].values[:32])), "dimensions")
    print("dimensions: the first 32 values, renormalised")


def windows(length, window, overlap):
    out, begin = [], 0
    while True:
        out.append((begin, min(begin + window, length)))
        if begin + window >= length:
            return out
        begin += window - overlap


def by_hand(stub, pb, sequences):
    """Each sequence embedded alone (model 'bounded', raw), pooled by the
    sequences' lengths."""
    answer = stub.Embed(pb.EmbedRequest(
        model="bounded", normalization=pb.NORMALIZATION_NONE,
        inputs=[pb.EmbedInput(token_ids=s) for s in sequences]), timeout=120)
    weights = np.array([len(s) for s in sequences], dtype=np.float64)
    values = np.array([e.values for e in answer.embeddings], dtype=np.float64)
    return (weights[:, None] * values).sum(axis=0) / weights.sum()


def check_chunks(stub, pb, strings):
    limit, overlap = 64, 8
    text = " ".join(strings[:12])
    content = list(stub.Tokenize(pb.TokenizeRequest(
        model="bounded", texts=[text], without_special_tokens=True),
        timeout=60).texts[0].ids)
    framed = [[CLS] + content[b:e] + [SEP]
              for b, e in windows(len(content), limit - 2, overlap)]
    assert len(framed) >= 3, len(content)
    ids = [(7 * i + 1000) % 30000 for i in range(150)]
    plain = [ids[b:e] for b, e in windows(len(ids), limit, overlap)]
    for inputs, pieces in (([pb.EmbedInput(text=text)], framed),
                           ([pb.EmbedInput(token_ids=ids)], plain)):
        got = stub.Embed(pb.EmbedRequest(
            model="bounded", inputs=inputs, truncation=pb.TRUNCATION_CHUNK,
            chunk_overlap_tokens=overlap,
            normalization=pb.NORMALIZATION_NONE), timeout=120).embeddings[0]
        assert got.num_chunks == len(pieces), (got.num_chunks, len(pieces))
        assert got.num_tokens == sum(len(p) for p in pieces)
        close(got.values, by_hand(stub, pb, pieces), "chunk")
    print("chunk: %d text windows and %d id windows pooled as by hand"
          % (len(framed), len(plain)))


def expect_error(grpc, call, code, needle):
    try:
        call()
    except grpc.RpcError as error:
        assert error.code() == code, (error.code(), error.details())
        assert needle in error.details(), (needle, error.details())
        return
    raise AssertionError("accepted: " + needle)


def check_model_and_errors(grpc, stub, pb):
    info = stub.GetModel(pb.GetModelRequest(), timeout=10).model
    tokenizer = info.config.tokenizer
    assert (tokenizer.kind, tokenizer.file) == ("wordpiece", "tokenizer.json")
    assert [(t.role, t.token, t.id) for t in tokenizer.special_tokens] == [
        ("cls", "[CLS]", CLS), ("sep", "[SEP]", SEP)], tokenizer
    assert info.limits.max_text_bytes_per_call == TEXT_BYTE_LIMIT
    assert info.limits.max_spans_per_input == 1024
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    embed = lambda **kw: lambda: stub.Embed(pb.EmbedRequest(**kw), timeout=30)
    expect_error(grpc, embed(inputs=[pb.EmbedInput(text="")]), invalid,
                 "inputs[0].token_ids is empty and inputs[0].text is empty")
    expect_error(grpc, embed(inputs=[pb.EmbedInput(text="x" * (TEXT_BYTE_LIMIT + 1))]),
                 invalid, "at most %d (max_text_bytes_per_call)" % TEXT_BYTE_LIMIT)
    expect_error(grpc, embed(inputs=[pb.EmbedInput(text="a cat", spans=[pb.Span(begin=2, end=9)])]),
                 invalid, "inputs[0].spans[0] is [2, 9): past the end")
    expect_error(grpc, embed(inputs=[pb.EmbedInput(text="a cat")], dimensions=257),
                 invalid, "dimensions is 257; must be in [1, 256] (hidden_size)")
    expect_error(grpc, embed(model="ids_only", inputs=[pb.EmbedInput(text="a cat")]),
                 grpc.StatusCode.FAILED_PRECONDITION,
                 "model 'ids_only' has no tokenizer")
    assert stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(text="still serving")]),
                      timeout=30).embeddings[0].num_tokens == 4
    print("GetModel and bad inputs: as documented")


def run(grpc, pb, rpc, channel, tokenize, strings, refs):
    stub = rpc.FavorStub(channel)
    check_tokenize(stub, pb, strings, refs)
    check_text_is_its_ids(stub, pb, strings, refs)
    check_late_chunking(stub, pb, strings, refs, tokenize)
    check_dimensions(stub, pb, strings)
    check_chunks(stub, pb, strings)
    check_model_and_errors(grpc, stub, pb)


def reference_tokenize(references_dir, out):
    """The Rust tokenizers' encoding of one more text, by the same script
    that wrote the references."""
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "..", "tokenizer", "huggingface_reference.mjs")

    def tokenize(text):
        corpus = os.path.join(out, "one.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write(json.dumps(text) + "\n")
        result = os.path.join(out, "one.jsonl")
        subprocess.run(["node", script, os.path.join(references_dir, "npm"),
                        os.path.join(references_dir, "bert-base-uncased",
                                     "tokenizer.json"), corpus, result],
                       check=True, stdout=subprocess.DEVNULL)
        return json.loads(open(result, encoding="utf-8").readline())
    return tokenize


def main():
    server, favor_model, default_model, proto_root, corpus, references = sys.argv[1:7]
    import grpc
    help_text = subprocess.run([server, "--help"], capture_output=True,
                               text=True).stdout
    assert re.search(r"--max_text_bytes_per_call .*default: 16777216",
                     help_text, re.S), help_text[:3000]
    reference_json = os.path.join(references, "bert-base-uncased", "tokenizer.json")
    assert open(reference_json, "rb").read() == open(
        os.path.join(default_model, "tokenizer.json"), "rb").read(), \
        "the default model's tokenizer.json is not the references' one"
    strings, refs = read_corpus(corpus, os.path.join(references,
                                                     "wordpiece_reference.jsonl"))
    with tempfile.TemporaryDirectory() as out:
        peer.generate_stubs(proto_root, out)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        import health_pb2, health_pb2_grpc
        repo = make_repository(favor_model, default_model, out)
        port, metrics_port = peer.free_port(), peer.free_port()
        log_path = os.path.join(out, "server.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [server, "--model_repository=" + repo, "--port=%d" % port,
                 "--metrics_port=%d" % metrics_port, "--http_port=0", "--threads=2",
                 "--max_text_bytes_per_call=%d" % TEXT_BYTE_LIMIT],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            channel = grpc.insecure_channel(
                "127.0.0.1:%d" % port,
                options=[("grpc.max_receive_message_length", 64 << 20)])
            peer.wait_serving(grpc, health_pb2, health_pb2_grpc, channel, process)
            run(grpc, pb, rpc, channel, reference_tokenize(references, out),
                strings, refs)
            body = urllib.request.urlopen(
                "http://127.0.0.1:%d/metrics" % metrics_port, timeout=10).read().decode()
            count = re.search(r'favor_tokenization_duration_seconds_count\{model="default"\} (\d+)', body)
            assert count and int(count.group(1)) > 0, body[:2000]
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0, "favor-server did not exit 0"
        finally:
            if process.poll() is None:
                process.kill()
            if sys.exc_info()[0] is not None:
                print(open(log_path).read())
    print("text peer test: OK")


if __name__ == "__main__":
    main()
