#!/usr/bin/python3
"""Request ids, traceparent and the access log of the real favor-server.

Starts favor-server (default model) with --log_format=json and
--slow_call_ms=1, then, with Python's urllib and grpcio (stubs generated here
from favor.proto):
- HTTP and gRPC calls with an id keep it, those without get a new one
  (32 hex digits), echoed as the X-Request-Id header / x-request-id initial
  metadata; a W3C traceparent is carried into the line, a malformed one
  dropped;
- a malformed id (a space, over 128 bytes, two of them) and a traceparent
  over 256 bytes are refused: HTTP 400 with OpenAI's error shape, gRPC
  INVALID_ARGUMENT; the server serves on;
- every line that names a request is one JSON object with nothing before it
  (json.loads), every call has exactly one (an HTTP request's service call
  writes none of its own), and its fields match the answers: tokens the
  usage / num_tokens, queue and compute times the ServerTiming, inputs,
  model, codes, peer; a line is a warning exactly when its call took over
  1 ms; no request text appears anywhere in the log;
- EmbedStream: one line when the stream ends, its messages summed;
then a second server with the default format writes the same line as text
through glog (`event=access ...`).

Usage: access_log_test.py SERVER MODEL_REPOSITORY PROTO_ROOT
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SECRET = "zebra-SECRET-payload-quokka"
HEX_ID = re.compile(r"^[0-9a-f]{32}$")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_peer_test import free_port, generate_stubs  # noqa: E402


def http(port, path, body=None, headers=None):
    """(status, headers, parsed JSON body) of one request; POST with a body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


def start(server_binary, repository, log_path, extra):
    grpc_port, http_port = free_port(), free_port()
    log = open(log_path, "w")
    server = subprocess.Popen(
        [server_binary, f"--model_repository={repository}", f"--port={grpc_port}",
         "--metrics_port=0", f"--http_port={http_port}", *extra],
        stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline:
        assert server.poll() is None, "favor-server exited during start-up"
        try:
            if http(http_port, "/health")[0] == 200:
                return server, grpc_port, http_port
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    raise AssertionError("GET /health never answered 200")


def stop(server):
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=60) == 0, "exit code %d" % server.returncode


class Calls:
    """What each call was answered, by request id, to compare with its line."""

    def __init__(self):
        self.expected = {}

    def expect(self, request_id, **fields):
        assert request_id not in self.expected, request_id
        self.expected[request_id] = fields


def check_http(port, calls):
    body = {"model": "default", "input": [SECRET + " one", SECRET + " two three"]}
    status, headers, answer = http(port, "/v1/embeddings", body,
                                   {"X-Request-Id": "py-http-1",
                                    "traceparent": TRACEPARENT})
    assert status == 200, answer
    assert headers["X-Request-Id"] == "py-http-1", dict(headers)
    timing = dict(re.findall(r"(\w+);dur=([0-9.]+)", headers["Server-Timing"]))
    calls.expect("py-http-1", protocol="http", route="/v1/embeddings",
                 traceparent=TRACEPARENT, model="default", inputs=2,
                 tokens=answer["usage"]["prompt_tokens"], http_status=200,
                 grpc_status="OK", queue_ms=float(timing["queue"]),
                 compute_ms=float(timing["compute"]))
    print("ok http: X-Request-Id kept and echoed")

    status, headers, answer = http(port, "/v1/embeddings",
                                   {"input": SECRET, "model": "default"})
    assert status == 200, answer
    made = headers["X-Request-Id"]
    assert HEX_ID.match(made), made
    calls.expect(made, protocol="http", route="/v1/embeddings", inputs=1,
                 tokens=answer["usage"]["total_tokens"], http_status=200)
    print(f"ok http: an id made when none is sent ({made})")

    # A traceparent that is not W3C's is dropped, the call served.
    status, headers, _ = http(port, "/v1/models", None,
                              {"X-Request-Id": "py-http-badtrace",
                               "traceparent": "00-not-a-trace"})
    assert status == 200 and headers["X-Request-Id"] == "py-http-badtrace"
    calls.expect("py-http-badtrace", route="/v1/models", http_status=200,
                 traceparent=None)

    for name, header_value in (("space", {"X-Request-Id": "has space"}),
                               ("long", {"X-Request-Id": "a" * 129}),
                               ("traceparent", {"traceparent": "0" * 257})):
        status, headers, answer = http(port, "/v1/embeddings",
                                       {"input": SECRET}, header_value)
        assert status == 400, (name, status, answer)
        assert set(answer["error"]) == {"message", "type", "param", "code"}, answer
        assert answer["error"]["type"] == "invalid_request_error", answer
        refused = headers["X-Request-Id"]
        assert HEX_ID.match(refused), refused
        calls.expect(refused, protocol="http", route="/v1/embeddings",
                     http_status=400, grpc_status=None, model=None)
        print(f"ok http: {name} refused 400: {answer['error']['message']}")
    assert http(port, "/health")[0] == 200

    # The JSON API's service calls: tokens from the service's trailers.
    status, headers, answer = http(port, "/v1/favor/Tokenize",
                                   {"texts": [SECRET, "a b c"]},
                                   {"X-Request-Id": "py-http-tokenize"})
    assert status == 200, answer
    calls.expect("py-http-tokenize", route="/v1/favor/Tokenize", model="default",
                 inputs=2, tokens=sum(len(t["ids"]) for t in answer["texts"]),
                 grpc_status="OK")
    status, headers, answer = http(port, "/v1/favor/Embed",
                                   {"model": "nope", "inputs": [{"text": SECRET}]},
                                   {"X-Request-Id": "py-http-notfound"})
    assert status == 404, answer
    calls.expect("py-http-notfound", route="/v1/favor/Embed", http_status=404,
                 grpc_status="NOT_FOUND", tokens=None)


def check_grpc(grpc, pb, rpc, port, calls):
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = rpc.FavorStub(channel)
    request = pb.EmbedRequest(inputs=[pb.EmbedInput(text=SECRET),
                                      pb.EmbedInput(token_ids=[101, 2088, 102])])
    answer, call = stub.Embed.with_call(
        request, timeout=60,
        metadata=[("x-request-id", "py-grpc-1"), ("traceparent", TRACEPARENT)])
    assert dict(call.initial_metadata())["x-request-id"] == "py-grpc-1"
    calls.expect("py-grpc-1", protocol="grpc", method="/favor.v1.Favor/Embed",
                 traceparent=TRACEPARENT, model="default", inputs=2,
                 tokens=answer.num_tokens, grpc_status="OK", http_status=None,
                 queue_ms=answer.timing.queue_time_micros / 1000,
                 compute_ms=answer.timing.compute_time_micros / 1000)
    print("ok grpc: x-request-id kept and echoed in initial metadata")

    answer, call = stub.Embed.with_call(request, timeout=60)
    made = dict(call.initial_metadata())["x-request-id"]
    assert HEX_ID.match(made), made
    calls.expect(made, method="/favor.v1.Favor/Embed", tokens=answer.num_tokens,
                 traceparent=None)
    print(f"ok grpc: an id made when none is sent ({made})")

    for name, metadata in (("space", [("x-request-id", "has space")]),
                           ("long", [("x-request-id", "a" * 129)]),
                           ("two", [("x-request-id", "a"), ("x-request-id", "b")]),
                           ("traceparent", [("traceparent", "0" * 257)])):
        try:
            stub.Embed(request, timeout=60, metadata=metadata)
            raise AssertionError(f"{name}: a malformed id was served")
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (name, error)
            echoed = dict(error.initial_metadata()) or dict(error.trailing_metadata())
            refused = echoed["x-request-id"]
            assert HEX_ID.match(refused), refused
            calls.expect(refused, method="/favor.v1.Favor/Embed",
                         grpc_status="INVALID_ARGUMENT", tokens=None)
            print(f"ok grpc: {name} refused INVALID_ARGUMENT: {error.details()}")
    stub.Embed(request, timeout=60)  # still serving (its line is checked too)

    try:
        stub.Embed(pb.EmbedRequest(model="nope", inputs=[pb.EmbedInput(text="x")]),
                   timeout=60, metadata=[("x-request-id", "py-grpc-notfound")])
        raise AssertionError("an unknown model was served")
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.NOT_FOUND, error
    calls.expect("py-grpc-notfound", grpc_status="NOT_FOUND", model=None)

    messages = [pb.EmbedStreamRequest(
        request_id=str(i),
        request=pb.EmbedRequest(inputs=[pb.EmbedInput(text=SECRET + " x" * i)] * (i + 1)))
        for i in range(3)]
    stream = stub.EmbedStream(iter(messages), timeout=60,
                              metadata=[("x-request-id", "py-stream-1")])
    answers = list(stream)
    assert dict(stream.initial_metadata())["x-request-id"] == "py-stream-1"
    assert len(answers) == 3 and all(a.HasField("response") for a in answers)
    calls.expect("py-stream-1", method="/favor.v1.Favor/EmbedStream",
                 model="default", inputs=6, grpc_status="OK",
                 tokens=sum(a.response.num_tokens for a in answers),
                 queue_ms=sum(a.response.timing.queue_time_micros
                              for a in answers) / 1000,
                 compute_ms=sum(a.response.timing.compute_time_micros
                                for a in answers) / 1000)
    print("ok grpc: EmbedStream, one line for the stream")
    channel.close()


def check_lines(log_text, calls):
    assert SECRET not in log_text, "request text in the log"
    lines = {}
    for line in log_text.splitlines():
        if "request_id" not in line:
            continue
        assert line.startswith("{"), f"something before the JSON: {line!r}"
        record = json.loads(line)
        assert isinstance(record, dict)
        lines.setdefault(record["request_id"], []).append(record)
    for request_id, want in calls.expected.items():
        got = lines.get(request_id, [])
        assert len(got) == 1, (request_id, got)
        record = got[0]
        for key, value in want.items():
            if value is None:
                assert key not in record, (request_id, key, record)
            elif isinstance(value, float):
                assert abs(record[key] - value) < 1e-3, (request_id, key, record)
            else:
                assert record[key] == value, (request_id, key, value, record)
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", record["time"])
        assert record["peer"].startswith(
            "ipv4:127.0.0.1:" if record["protocol"] == "grpc" else "127.0.0.1:"), record
        # --slow_call_ms=1: a warning exactly when the call took over 1 ms
        # (the line rounds to the microsecond).
        if abs(record["duration_ms"] - 1) > 1e-3:
            assert record["level"] == (
                "warning" if record["duration_ms"] > 1 else "info"), record
    levels = {r["level"] for rs in lines.values() for r in rs}
    assert levels == {"info", "warning"}, levels
    print(f"ok log: {len(calls.expected)} calls, one JSON line each, fields "
          f"match the answers; levels {sorted(levels)}; no request text")


def check_text_format(server_binary, repository, out):
    log_path = os.path.join(out, "text.log")
    server, _, http_port = start(server_binary, repository, log_path, [])
    try:
        status, _, _ = http(http_port, "/v1/models", None, {"X-Request-Id": "py-text"})
        assert status == 200
    finally:
        stop(server)
    with open(log_path) as f:
        text = [l for l in f if "request_id=py-text" in l]
    assert len(text) == 1, text
    assert re.match(r"^I\d{8} .*\] event=access request_id=py-text protocol=http "
                    r"route=/v1/models duration_ms=[0-9.]+ http_status=200 grpc_status=OK "
                    r"peer=127\.0\.0\.1:\d+$", text[0]), text[0]
    print("ok text: event=access line through glog")


def main():
    server_binary, repository, proto_root = sys.argv[1:4]
    import grpc
    with tempfile.TemporaryDirectory() as out:
        generate_stubs(proto_root, out)
        import favor.v1.favor_pb2 as pb
        import favor.v1.favor_pb2_grpc as rpc
        log_path = os.path.join(out, "server.log")
        server, grpc_port, http_port = start(
            server_binary, repository, log_path,
            ["--log_format=json", "--slow_call_ms=1"])
        calls = Calls()
        try:
            check_http(http_port, calls)
            check_grpc(grpc, pb, rpc, grpc_port, calls)
        finally:
            if server.poll() is None:
                stop(server)
        with open(log_path) as f:
            log_text = f.read()
        try:
            check_lines(log_text, calls)
        except AssertionError:
            print(log_text, file=sys.stderr)
            raise
        check_text_format(server_binary, repository, out)


if __name__ == "__main__":
    main()
