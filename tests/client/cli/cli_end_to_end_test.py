#!/usr/bin/python3
"""favor-cli against a real favor-server (two small random models).

Every command, its JSON output and its exit codes: health (SERVING,
NOT_SERVING from a Python grpcio health server, an unknown service, a server
that is not there), models, model, embed (ids from arguments, a file and
JSON lines on stdin; the right number of embeddings of the model's width),
attend (random and file-given tensors, --output_file), bearer tokens, and
bad usage or input (the gRPC code as exit status, one stderr line).

Usage: cli_end_to_end_test.py FAVOR_CLI FAVOR_SERVER FAVOR_MODEL
"""
import json
import math
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from favor_server_fixture import (HIDDEN, FavorServer, expect_error,  # noqa: E402
                                  make_models, run)

INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = 3, 5, 14, 15, 16


def check_health(cli, server):
    code, out, err = run([cli, "--endpoint=" + server.endpoint, "health"])
    assert (code, out, err) == (0, "SERVING\n", ""), (code, out, err)
    code, out, _ = run([cli, "--endpoint", server.endpoint, "health",
                        "favor.v1.Favor"])
    assert (code, out) == (0, "SERVING\n"), (code, out)
    expect_error([cli, "--endpoint=" + server.endpoint, "health", "no.such.Service"],
                 NOT_FOUND, "favor-cli: NOT_FOUND")
    # Nothing listens on a port just closed: quick UNAVAILABLE.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    start = time.time()
    expect_error([cli, "--endpoint=127.0.0.1:%d" % closed, "health"], UNAVAILABLE,
                 "favor-cli: UNAVAILABLE")
    assert time.time() - start < 5, "health took %.1f s" % (time.time() - start)


def check_not_serving(cli):
    """A health service that answers NOT_SERVING (a Python grpcio server
    speaking grpc.health.v1 on raw bytes: HealthCheckResponse{status: 2} is
    08 02): exit 14 with the status in the one stderr line."""
    import grpc
    from concurrent import futures
    handler = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(
            lambda request, context: b"\x08\x02",
            request_deserializer=lambda data: data,
            response_serializer=lambda data: data)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                         handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        expect_error([cli, "--endpoint=127.0.0.1:%d" % port, "health"],
                     UNAVAILABLE, "health of service '' is NOT_SERVING")
    finally:
        server.stop(None)


def check_models(cli, server):
    code, out, err = run([cli, "--endpoint=" + server.endpoint, "models"])
    assert code == 0, err
    models = json.loads(out)
    assert models["default_model"] == "small", models["default_model"]
    assert [m["name"] for m in models["models"]] == ["small", "tiny"], out[:500]
    for model in models["models"]:
        assert model["config"]["hidden_size"] == HIDDEN[model["name"]], model
        assert model["config"]["config_json"]["hidden_size"] == HIDDEN[model["name"]]
    code, out, err = run([cli, "--endpoint=" + server.endpoint, "--pretty",
                          "model", "tiny"])
    assert code == 0, err
    assert out.startswith("{\n  "), out[:50]
    tiny = json.loads(out)
    assert tiny["name"] == "tiny" and not tiny["is_default"], tiny
    assert tiny["config"]["vocab_size"] == 50, tiny["config"]
    assert tiny["limits"]["max_tokens_per_input"] == 64, tiny["limits"]
    assert tiny["devices"] == ["cpu"], tiny["devices"]
    expect_error([cli, "--endpoint=" + server.endpoint, "model", "nope"],
                 NOT_FOUND, "nope")
    # An answer that cannot be written (a full disk) is not a success.
    with open("/dev/full", "w") as full:
        done = subprocess.run([cli, "--endpoint=" + server.endpoint, "models"],
                              stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    assert done.returncode == DATA_LOSS, (done.returncode, done.stderr)
    assert "cannot write the output to stdout: No space left" in done.stderr, done.stderr


def embed(cli, server, args, stdin=None):
    code, out, err = run([cli, "--endpoint=" + server.endpoint, "embed"] + args,
                         stdin=stdin)
    assert code == 0, (args, code, err)
    assert err == "", err
    return json.loads(out)


def check_embedding_shapes(result, model, lengths):
    assert result["model"] == model, result["model"]
    assert [e["num_tokens"] for e in result["embeddings"]] == lengths, result
    assert result["num_tokens"] == sum(lengths), result
    for e in result["embeddings"]:
        assert len(e["values"]) == HIDDEN[model], len(e["values"])
        # The models L2-normalise by default.
        norm = math.sqrt(sum(v * v for v in e["values"]))
        assert abs(norm - 1) < 1e-4, norm


def check_embed(cli, server, tmp):
    from_args = embed(cli, server, ["1,2,3", "4 5", "99"])
    check_embedding_shapes(from_args, "small", [3, 2, 1])
    assert from_args["timing"]["compute_time_micros"] > 0, from_args["timing"]
    path = os.path.join(tmp, "inputs.txt")
    with open(path, "w") as f:
        f.write("# three inputs\n[1, 2, 3]\n\n{\"token_ids\": [4, 5]}\n99\n")
    from_file = embed(cli, server, ["--input_file=" + path])
    check_embedding_shapes(from_file, "small", [3, 2, 1])
    # The same inputs give the same embeddings, however they were given.
    for a, b in zip(from_args["embeddings"], from_file["embeddings"]):
        assert max(abs(x - y) for x, y in zip(a["values"], b["values"])) < 1e-5
    lines = "".join(json.dumps({"token_ids": list(range(n))}) + "\n"
                    for n in (1, 10, 49))
    from_stdin = embed(cli, server, ["--model=tiny"], stdin=lines)
    check_embedding_shapes(from_stdin, "tiny", [1, 10, 49])
    tokens = embed(cli, server, ["--model=tiny", "--token_embeddings",
                                 "--pooling=none", "1,2,3"])
    token_embeddings = tokens["embeddings"][0]["token_embeddings"]
    assert token_embeddings["shape"] == [3, 16], token_embeddings["shape"]
    assert len(token_embeddings["values"]) == 48
    truncated = embed(cli, server, ["--model=tiny", "--truncation=right",
                                    ",".join(["7"] * 70)])
    assert truncated["embeddings"][0]["num_tokens"] == 64, truncated
    assert truncated["embeddings"][0]["num_truncated_tokens"] == 6, truncated
    # Quantised forms beside the floats (docs/http.md, "Embedding types"),
    # checked against the floats themselves.
    typed = embed(cli, server, ["--embedding_types=float,int8,ubinary", "1,2,3"])
    first = typed["embeddings"][0]
    assert first["values"] == from_args["embeddings"][0]["values"], first
    rounded = [math.floor(abs(127 * x) + 0.5) * (1 if x >= 0 else -1)
               for x in first["values"]]
    assert first["int8"] == [max(-127, min(127, r)) for r in rounded], first
    bits = "".join("1" if x > 0 else "0" for x in first["values"])
    bits += "0" * (-len(bits) % 8)
    assert first["ubinary"] == [int(bits[i:i + 8], 2)
                                for i in range(0, len(bits), 8)], first
    assert "uint8" not in first and "binary" not in first, first
    only_bits = embed(cli, server, ["--embedding_types=binary", "1,2,3"])
    assert only_bits["embeddings"][0]["values"] == [], only_bits
    assert only_bits["embeddings"][0]["binary"] == [
        b - 128 for b in first["ubinary"]], only_bits


def check_bad_embed(cli, server, tmp):
    endpoint = "--endpoint=" + server.endpoint
    # The server's checks: vocabulary, length (the gRPC code as exit status).
    expect_error([cli, endpoint, "embed", "1,2,100"], INVALID_ARGUMENT,
                 "vocab_size")
    expect_error([cli, endpoint, "embed", "--model=tiny", ",".join(["1"] * 65)],
                 INVALID_ARGUMENT, "max_tokens_per_input")
    expect_error([cli, endpoint, "embed", "--model=nope", "1"], NOT_FOUND, "nope")
    # The tool's own checks.
    expect_error([cli, endpoint, "embed", "1,x"], INVALID_ARGUMENT,
                 "input argument 0: 'x' is not a token id")
    expect_error([cli, endpoint, "embed"], INVALID_ARGUMENT, "no input",
                 stdin="\n# nothing\n")
    expect_error([cli, endpoint, "embed"], INVALID_ARGUMENT, "stdin line 2",
                 stdin="[1]\n[1, 2, -3]\n")
    expect_error([cli, endpoint, "embed", "--input_file=" + tmp + "/absent"],
                 NOT_FOUND, "absent")
    # A directory was an uncaught exception from the read (exit 134).
    expect_error([cli, endpoint, "embed", "--input_file=" + tmp], NOT_FOUND,
                 "Is a directory")
    expect_error([cli, endpoint, "--bearer_token_file=" + tmp, "health"],
                 NOT_FOUND, "Is a directory")
    expect_error([cli, endpoint, "embed", "--pooling=weighted", "1"],
                 INVALID_ARGUMENT, "--pooling=weighted")
    expect_error([cli, endpoint, "embed", "--embedding_types=int4", "1"],
                 INVALID_ARGUMENT, "--embedding_types=int4")
    expect_error([cli, endpoint, "--bogus_flag", "health"], INVALID_ARGUMENT,
                 "unknown flag '--bogus_flag'")
    expect_error([cli, endpoint, "--deadline=soon", "health"], INVALID_ARGUMENT,
                 "bad value 'soon' for --deadline")
    expect_error([cli, endpoint, "frobnicate"], INVALID_ARGUMENT,
                 "unknown command 'frobnicate'")
    expect_error([cli, endpoint], INVALID_ARGUMENT, "no command")
    expect_error([cli, endpoint, "model"], INVALID_ARGUMENT, "takes 1 argument")
    code, out, _ = run([cli, "--help"])
    assert code == 0 and "--endpoint" in out and "embed" in out, (code, out)


def floats(path):
    with open(path, "rb") as f:
        data = f.read()
    return struct.unpack("<%df" % (len(data) // 4), data)


def check_attend(cli, server, tmp):
    endpoint = "--endpoint=" + server.endpoint
    code, out, err = run([cli, endpoint, "attend", "--shape=2,2,16,8",
                          "--kernel=favor+", "--num_random_features=32",
                          "--output_file=" + tmp + "/out.f32"])
    assert code == 0, err
    summary = json.loads(out)
    assert summary["kernel"] == "favor+" and summary["num_features"] == 32, summary
    assert summary["output"]["shape"] == [2, 2, 16, 8], summary
    assert summary["output"]["elements"] == 512, summary
    assert len(floats(tmp + "/out.f32")) == 512
    # Zero queries and keys: softmax attends evenly, so every output row is
    # the mean of the value rows.
    with open(tmp + "/zeros.f32", "wb") as f:
        f.write(struct.pack("<8f", *([0.0] * 8)))
    with open(tmp + "/values.f32", "wb") as f:
        f.write(struct.pack("<8f", 0, 0, 1, 10, 2, 20, 3, 30))
    code, out, err = run([cli, endpoint, "attend", "--shape=1,1,4,2",
                          "--kernel=softmax", "--query_file=" + tmp + "/zeros.f32",
                          "--key_file=" + tmp + "/zeros.f32",
                          "--value_file=" + tmp + "/values.f32",
                          "--output_file=" + tmp + "/mean.f32"])
    assert code == 0, err
    got = floats(tmp + "/mean.f32")
    assert all(abs(got[2 * i] - 1.5) < 1e-4 and abs(got[2 * i + 1] - 15) < 1e-3
               for i in range(4)), got
    expect_error([cli, endpoint, "attend", "--kernel=nope"], INVALID_ARGUMENT,
                 "known kernels")
    expect_error([cli, endpoint, "attend", "--shape=1,1,4,2",
                  "--query_file=" + tmp + "/values.f32", "--shape=1,1,4,4"],
                 INVALID_ARGUMENT, "needs 64")
    expect_error([cli, endpoint, "attend", "--shape=1,1,4"], INVALID_ARGUMENT,
                 "--shape")
    # A shape too large to make was an uncaught bad_alloc or length_error.
    expect_error([cli, endpoint, "attend", "--shape=3037000500,3037000500,1,1"],
                 INVALID_ARGUMENT, "of more than 268435456 elements")


def check_bearer_tokens(cli, binary, repository, tmp):
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("# tokens\nsecret-one\n")
    server = FavorServer(binary, repository, os.path.join(tmp, "auth.log"),
                         ["--auth_tokens_file=" + tokens])
    try:
        endpoint = "--endpoint=" + server.endpoint
        # Health stays open: the container's health check needs no token.
        code, out, _ = run([cli, endpoint, "health"])
        assert (code, out) == (0, "SERVING\n"), (code, out)
        expect_error([cli, endpoint, "models"], UNAUTHENTICATED,
                     "favor-cli: UNAUTHENTICATED")
        expect_error([cli, endpoint, "--bearer_token=wrong", "embed", "1"],
                     UNAUTHENTICATED, "UNAUTHENTICATED")
        token_file = os.path.join(tmp, "client-token")
        with open(token_file, "w") as f:
            f.write("secret-one\n")
        code, out, err = run([cli, endpoint, "--bearer_token_file=" + token_file,
                              "embed", "1,2"])
        assert code == 0, err
        assert len(json.loads(out)["embeddings"]) == 1
        expect_error([cli, endpoint, "--bearer_token_file=" + tmp + "/none",
                      "models"], NOT_FOUND, "none")
    finally:
        server.stop()


def main():
    cli, binary, favor_model = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        repository = os.path.join(tmp, "models")
        make_models(favor_model, repository)
        server = FavorServer(binary, repository, os.path.join(tmp, "server.log"))
        try:
            check_health(cli, server)
            check_models(cli, server)
            check_embed(cli, server, tmp)
            check_bad_embed(cli, server, tmp)
            check_attend(cli, server, tmp)
        except BaseException:
            print(server.log())
            raise
        finally:
            server.stop()
        check_bearer_tokens(cli, binary, repository, tmp)
    check_not_serving(cli)
    print("favor-cli end-to-end test: OK")


if __name__ == "__main__":
    main()
