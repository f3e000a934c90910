#!/usr/bin/python3
"""favor-server's HTTP API against independent clients, with the real binary.

Starts favor-server (default model) on free ports and waits for GET /health.
Then:
- the official OpenAI client (npm `openai`, run with Debian's node by
  openai_peer.mjs) calls /v1/embeddings with every input form, with base64
  (its own choice and asked for), float and dimensions; each embedding
  equals gRPC Embed's answer for the same input (Python's grpcio, stubs
  generated here from favor.proto) to 1e-6, and usage counts its tokens;
  with Favor's extensions (embedding_types, truncate, late_chunking) the
  vectors equal gRPC's for the same request, every quantised value equals
  both gRPC's bytes and reference_quantized (computed here from gRPC's
  float32 values), and `inputs` equals gRPC's token counts;
- Python's urllib calls every unary RPC as JSON (POST /v1/favor/<Method>,
  bodies written by protobuf's json_format) and gets gRPC's answer;
- GET /info describes the default model as GetModel does and the build as
  `git rev-parse HEAD` does; bad extension requests are 400s;
- SIGTERM ends the server with code 0.

Usage: http_peer_test.py SERVER MODEL_REPOSITORY PROTO_ROOT NODE_MODULES
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3)
and node; it fails, never skips, when they are missing.
"""
import base64
import json
import math
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "service"))
from python_peer_test import free_port, generate_stubs  # noqa: E402


def http(port, path, body=None, timeout=60):
    """(status, parsed JSON body) of one request; POST when body is given."""
    data = None if body is None else body.encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


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


def grpc_embed(stub, pb, request):
    inputs = request["input"]
    if isinstance(inputs, str) or (inputs and isinstance(inputs[0], int)):
        inputs = [inputs]
    message = pb.EmbedRequest(model="default",
                              dimensions=request.get("dimensions", 0))
    for item in inputs:
        if isinstance(item, str):
            message.inputs.add(text=item)
        else:
            message.inputs.add(token_ids=item)
    return stub.Embed(message, timeout=60)


def round_half_away(x):
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def reference_quantized(values):
    """favor.proto's EmbeddingType forms of `values` (float32 values as
    Python floats), computed here independently of the server: int8 and
    uint8 scaled, rounded half away from zero and clipped; the sign bits
    packed most significant first as numpy.packbits packs them."""
    bits = [1 if x > 0 else 0 for x in values]
    bits += [0] * (-len(bits) % 8)
    ubinary = [int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8)]
    return {
        "int8": [max(-127, min(127, round_half_away(127 * x))) for x in values],
        "uint8": [max(0, min(255, round_half_away(127.5 * x + 127.5))) for x in values],
        "binary": [b - 128 for b in ubinary],
        "ubinary": ubinary,
    }


def signed(data):
    return [b - 256 if b > 127 else b for b in data]


def close(a, b, what):
    assert len(a) == len(b), (what, len(a), len(b))
    error = max(abs(x - y) for x, y in zip(a, b))
    assert error <= 1e-6, (what, error)


def grpc_extension_embed(stub, pb, request):
    """gRPC's answer to a /v1/embeddings request with Favor's extension
    fields, as (per answered vector: float values, quantized, tokens,
    truncated tokens), and the call's tokens."""
    message = pb.EmbedRequest(model="default")
    texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
    if request.get("late_chunking"):
        document = message.inputs.add(text=" ".join(texts))
        begin = 0
        for text in texts:
            document.spans.add(begin=begin, end=begin + len(text.encode()))
            begin += len(text.encode()) + 1
    else:
        for text in texts:
            message.inputs.add(text=text)
    if request.get("truncate"):
        left = request.get("truncation_direction", "right").lower() == "left"
        message.truncation = pb.TRUNCATION_LEFT if left else pb.TRUNCATION_RIGHT
    # Always with FLOAT, to compare against the exact float32 values.
    names = ["float"] + [t for t in request.get("embedding_types", []) if t != "float"]
    if "embedding_types" in request:
        message.embedding_types.extend(
            pb.EmbeddingType.Value("EMBEDDING_TYPE_" + t.upper()) for t in names)
    answer = stub.Embed(message, timeout=60)
    if request.get("late_chunking"):
        vectors = [(list(s.values), s.quantized, s.num_tokens, 0)
                   for s in answer.embeddings[0].spans]
    else:
        vectors = [(list(e.values), e.quantized, e.num_tokens, e.num_truncated_tokens)
                   for e in answer.embeddings]
    return vectors, answer.num_tokens


def check_extension_case(case, stub, pb):
    """One OpenAI-client case with Favor's extensions against gRPC: the
    vectors (float, and every quantised type against both gRPC's bytes and
    reference_quantized), and the per-input token counts."""
    request = case["request"]
    vectors, tokens = grpc_extension_embed(stub, pb, request)
    assert case["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}, case
    assert case["inputs"] == [{"index": i, "tokens": v[2], "truncated_tokens": v[3]}
                              for i, v in enumerate(vectors)], case["inputs"]
    assert len(case["data"]) == len(vectors), case["name"]
    types = request.get("embedding_types")
    base64_types = request.get("encoding_format") == "base64"
    for item, (values, quantized, _, _) in zip(case["data"], vectors):
        if types is None or "float" in types:
            close(item["embedding"], values, case["name"])
        else:
            assert item["embedding"] is None, item
        if types is None:
            assert item.get("embeddings") is None, item
            continue
        want = reference_quantized(values)
        assert sorted(item["embeddings"]) == sorted(types), item["embeddings"]
        for name in types:
            got = item["embeddings"][name]
            if name == "float":
                close(struct.unpack(f"<{len(values)}f", base64.b64decode(got))
                      if base64_types else got, values, case["name"])
                continue
            if base64_types:
                raw = list(base64.b64decode(got))
                got = signed(raw) if name in ("int8", "binary") else raw
            assert got == want[name], (case["name"], name, got, want[name])
            grpc_bytes = list(getattr(quantized, name))
            if name in ("int8", "binary"):
                grpc_bytes = signed(grpc_bytes)
            assert got == grpc_bytes, (case["name"], name)
    print(f"ok openai {case['name']}: {len(case['data'])} vector(s) and token "
          "counts equal gRPC's" + (", quantised as the reference" if types else ""))


def check_openai(port, node_modules, stub, pb):
    output = subprocess.run(
        ["node", os.path.join(HERE, "openai_peer.mjs"), node_modules,
         f"http://127.0.0.1:{port}/v1"],
        check=True, capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "NODE_PATH"}).stdout
    got = json.loads(output)
    assert got["models"] == ["default"], got["models"]
    assert got["unknownModelStatus"] == 404, got["unknownModelStatus"]
    assert got["retrieved"] == {"id": "default", "object": "model",
                                "owned_by": "favor"}, got["retrieved"]
    assert got["unknownRetrieveStatus"] == 404, got["unknownRetrieveStatus"]
    extensions = ("embedding_types", "truncate", "late_chunking")
    for case in got["results"]:
        if any(k in case["request"] for k in extensions):
            check_extension_case(case, stub, pb)
            continue
        expected = grpc_embed(stub, pb, case["request"])
        assert case["inputs"] == [
            {"index": i, "tokens": e.num_tokens,
             "truncated_tokens": e.num_truncated_tokens}
            for i, e in enumerate(expected.embeddings)], case["inputs"]
        assert case["object"] == "list" and case["model"] == "default", case
        assert case["usage"] == {"prompt_tokens": expected.num_tokens,
                                 "total_tokens": expected.num_tokens}, case
        assert len(case["data"]) == len(expected.embeddings), case["name"]
        for i, (item, want) in enumerate(zip(case["data"], expected.embeddings)):
            assert item["object"] == "embedding" and item["index"] == i, item
            assert len(item["embedding"]) == len(want.values), case["name"]
            error = max(abs(a - b) for a, b in zip(item["embedding"], want.values))
            assert error <= 1e-6, (case["name"], i, error)
        print(f"ok openai {case['name']}: {len(case['data'])} embedding(s) "
              f"equal gRPC's")


def tensor(pb, values, shape):
    return pb.Tensor(shape=shape, dtype=pb.DTYPE_FLOAT32,
                     data=struct.pack("<%df" % len(values), *values))


def check_json_api(port, stub, pb):
    from google.protobuf import json_format
    calls = [
        ("Embed", pb.EmbedRequest(inputs=[pb.EmbedInput(text="hello json"),
                                          pb.EmbedInput(token_ids=[101, 2088, 102])],
                                  include_token_embeddings=True,
                                  embedding_types=[pb.EMBEDDING_TYPE_FLOAT,
                                                   pb.EMBEDDING_TYPE_INT8,
                                                   pb.EMBEDDING_TYPE_UBINARY]),
         pb.EmbedResponse),
        ("Attend", pb.AttendRequest(query=tensor(pb, [0.1] * 8, [1, 1, 4, 2]),
                                    key=tensor(pb, [0.2] * 8, [1, 1, 4, 2]),
                                    value=tensor(pb, list(range(8)), [1, 1, 4, 2]),
                                    kernel="softmax"),
         pb.AttendResponse),
        ("ListModels", pb.ListModelsRequest(), pb.ListModelsResponse),
        ("GetModel", pb.GetModelRequest(model="default"), pb.GetModelResponse),
        ("Tokenize", pb.TokenizeRequest(texts=["Hello, JSON world!"]),
         pb.TokenizeResponse),
    ]
    methods = [m.name for m in pb.DESCRIPTOR.services_by_name["Favor"].methods
               if not m.client_streaming and not m.server_streaming]
    assert sorted(methods) == sorted(c[0] for c in calls), methods
    for method, request, response_type in calls:
        body = json_format.MessageToJson(request, preserving_proto_field_name=True)
        status, answer = http(port, f"/v1/favor/{method}", body)
        assert status == 200, (method, status, answer)
        got = json_format.ParseDict(answer, response_type())
        want = getattr(stub, method)(request, timeout=60)
        for message in (got, want):  # queue and compute times differ per call
            if message.DESCRIPTOR.fields_by_name.get("timing"):
                message.ClearField("timing")
        assert got == want, (method, got, want)
        print(f"ok json {method}: same answer as gRPC")
    status, answer = http(port, "/v1/favor/EmbedStream", "{}")
    assert status == 501 and "gRPC only" in answer["error"]["message"], answer


def check_info(port, stub, pb, source_dir):
    """GET /info describes the default model as GetModel does, and the build
    as git does; an unknown model is 404 in OpenAI's error shape."""
    status, info = http(port, "/info")
    assert status == 200, (status, info)
    model = stub.GetModel(pb.GetModelRequest(model="default"), timeout=60).model
    run = subprocess.run(["git", "-C", source_dir, "rev-parse", "HEAD"],
                         capture_output=True, text=True)
    revision = run.stdout.strip() if run.returncode == 0 else "unknown"
    want = {
        "model_id": "default", "model_sha": model.revision, "model_dtype": model.dtype,
        "max_input_length": model.limits.max_tokens_per_input,
        "max_batch_tokens": model.limits.max_tokens_per_batch,
        "max_batch_requests": model.limits.max_requests_per_batch,
        "max_client_batch_size": model.limits.max_inputs_per_call,
        "max_concurrent_requests": model.limits.max_queued_requests,
        "architecture": model.config.architecture,
        "attention": {"kernel": model.config.attention.kernel,
                      "num_features": model.config.attention.num_features,
                      "num_random_features": model.config.attention.num_random_features},
        "model_type": {"embedding": {"pooling": "mean"}},
        "sha": revision,
    }
    for key, value in want.items():
        assert info[key] == value, (key, info[key], value)
    assert info["attention"]["kernel"] == "favor+", info["attention"]
    assert info["max_input_length"] == 1048576, info
    assert info["memory_budget_bytes"] > 0, info
    assert info["version"].count(".") == 2, info
    status, same = http(port, "/info?model=default")
    assert status == 200 and same == info, (status, same)
    status, error = http(port, "/info?model=no-such-model")
    assert status == 404 and error["error"]["code"] == "model_not_found", error
    print(f"ok /info: {info['model_id']} {info['attention']} sha {info['sha'][:12]}")


def check_late_chunking_limits(port):
    """late_chunking with one input, or with token ids: 400 in OpenAI's
    error shape, and the server still serves."""
    for body in ({"input": ["only one chunk"], "late_chunking": True},
                 {"input": [[101, 102], [101, 102]], "late_chunking": True},
                 {"input": "x", "embedding_types": ["int4"]}):
        status, error = http(port, "/v1/embeddings", json.dumps(body))
        assert status == 400, (body, status, error)
        assert error["error"]["type"] == "invalid_request_error", error
    status, _ = http(port, "/v1/embeddings", json.dumps({"input": "still serving"}))
    assert status == 200
    print("ok bad extension requests: 400 invalid_request_error, still serving")


def check_framing(stub, pb):
    """A client that frames token ids with GetModel's cls and sep ids, as
    favor.proto tells it to, gets the embedding of the text itself."""
    config = stub.GetModel(pb.GetModelRequest(model="default"), timeout=60).model.config
    roles = {t.role: t.id for t in config.tokenizer.special_tokens}
    assert config.cls_token_id == roles["cls"] and config.sep_token_id == roles["sep"], config
    assert config.unk_token_id >= 0 and config.mask_token_id >= 0, config
    text = "Framing token ids by hand"
    bare = stub.Tokenize(pb.TokenizeRequest(texts=[text], without_special_tokens=True),
                         timeout=60).texts[0].ids
    ids = [config.cls_token_id, *bare, config.sep_token_id]
    answer = stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(text=text),
                                                pb.EmbedInput(token_ids=ids)]), timeout=60)
    a, b = (list(e.values) for e in answer.embeddings)
    assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5, "framed ids differ from the text"
    print(f"ok framing: [{config.cls_token_id}] + ids + [{config.sep_token_id}] "
          "embeds as the text does")


def main():
    server_binary, repository, proto_root, node_modules = sys.argv[1:5]
    import grpc
    with tempfile.TemporaryDirectory() as out:
        generate_stubs(proto_root, out)
        import favor.v1.favor_pb2 as pb
        import favor.v1.favor_pb2_grpc as rpc
        grpc_port, http_port = free_port(), free_port()
        log = open(os.path.join(out, "server.log"), "w+")
        server = subprocess.Popen(
            [server_binary, f"--model_repository={repository}",
             f"--port={grpc_port}", "--metrics_port=0", f"--http_port={http_port}"],
            stderr=log, text=True)
        try:
            wait_healthy(http_port, server)
            channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
            stub = rpc.FavorStub(channel)
            check_openai(http_port, node_modules, stub, pb)
            check_json_api(http_port, stub, pb)
            check_info(http_port, stub, pb, os.path.dirname(os.path.abspath(proto_root)))
            check_late_chunking_limits(http_port)
            check_framing(stub, pb)
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=60) == 0, "exit code %d" % server.returncode
            print("ok SIGTERM: exit 0")
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            log.seek(0)
            if sys.exc_info()[0] is not None:
                print(log.read(), file=sys.stderr)
            log.close()


if __name__ == "__main__":
    main()
