#!/usr/bin/python3
"""A second gRPC implementation against the real favor-server binary.

Starts favor-server on free ports with the given model repository, waits for
grpc.health.v1 to say SERVING, calls Embed and Attend with Python's grpcio
(stubs generated here, at test time, from proto/favor/v1/favor.proto with
protoc and grpc_python_plugin), scrapes /metrics, then sends SIGTERM and
expects a clean exit (code 0) after the shutdown log lines.

Usage: python_peer_test.py SERVER_BINARY MODEL_REPOSITORY PROTO_ROOT
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).
"""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HEALTH_PROTO = """
syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }
"""

# The part of grpc/reflection/v1alpha/reflection.proto that lists services.
REFLECTION_PROTO = """
syntax = "proto3";
package grpc.reflection.v1alpha;
message ServerReflectionRequest { string host = 1; oneof message_request { string list_services = 7; } }
message ServiceResponse { string name = 1; }
message ListServiceResponse { repeated ServiceResponse service = 1; }
message ServerReflectionResponse { oneof message_response { ListServiceResponse list_services_response = 6; } }
service ServerReflection {
  rpc ServerReflectionInfo(stream ServerReflectionRequest) returns (stream ServerReflectionResponse);
}
"""


def generate_stubs(proto_root, out):
    for name, text in (("health.proto", HEALTH_PROTO),
                       ("reflection.proto", REFLECTION_PROTO)):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    for root, proto in ((proto_root, "favor/v1/favor.proto"), (out, "health.proto"),
                        (out, "reflection.proto")):
        subprocess.run(["protoc", "--proto_path=" + root, "--python_out=" + out,
                        "--grpc_python_out=" + out,
                        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                        os.path.join(root, proto)], check=True)
    sys.path.insert(0, out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_serving(grpc, health_pb2, health_grpc, channel, server):
    stub = health_grpc.HealthStub(channel)
    deadline = time.time() + 120
    while time.time() < deadline:
        assert server.poll() is None, "favor-server exited during start-up"
        try:
            for service in ("", "favor.v1.Favor"):
                status = stub.Check(health_pb2.HealthCheckRequest(service=service),
                                    timeout=2).status
                if status != health_pb2.HealthCheckResponse.SERVING:
                    raise RuntimeError(status)
            return
        except (grpc.RpcError, RuntimeError):
            time.sleep(0.2)
    raise AssertionError("favor-server never became SERVING")


def start_logged_server(command, log_path, timeout=120):
    """Starts favor-server `command` (a list; --port=0 and --metrics_port=0
    let the kernel pick the ports) with its log in `log_path`, and waits
    until it logs event=serving. Returns (process, log text, gRPC port,
    metrics port). Reading the ports from the log races for no port, and a
    channel made only once the port listens does not back off for seconds."""
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = open(log_path).read()
        if "event=serving" in text:
            port = re.search(r"event=grpc_started .* port=(\d+)", text)
            metrics = re.search(r"event=metrics_started .* port=(\d+)", text)
            return (server, text, int(port.group(1)),
                    int(metrics.group(1)) if metrics else 0)
        assert server.poll() is None, "favor-server exited:\n" + text
        time.sleep(0.02)
    server.kill()
    raise AssertionError("favor-server never became SERVING")


def floats(data):
    return struct.unpack("<%df" % (len(data) // 4), data)


def check_calls(grpc, pb, rpc, channel):
    stub = rpc.FavorStub(channel)
    models = stub.ListModels(pb.ListModelsRequest(), timeout=10)
    assert models.default_model, models
    info = models.models[0]
    dim = info.config.hidden_size
    embed = stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(token_ids=[1, 2, 3]),
                                               pb.EmbedInput(token_ids=[4] * 50)]),
                       timeout=60)
    assert [len(e.values) for e in embed.embeddings] == [dim, dim], embed
    assert embed.num_tokens == 53 and embed.model == models.default_model
    again = stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(token_ids=[1, 2, 3])]),
                       timeout=60)
    assert max(abs(a - b) for a, b in zip(again.embeddings[0].values,
                                          embed.embeddings[0].values)) < 1e-4
    try:
        stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(token_ids=[])]), timeout=10)
        raise AssertionError("empty input accepted")
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
        assert "inputs[0].token_ids is empty" in error.details(), error.details()
    zeros = struct.pack("<8f", *([0.0] * 8))
    values = struct.pack("<8f", 0, 0, 1, 10, 2, 20, 3, 30)
    tensor = lambda data: pb.Tensor(shape=[1, 1, 4, 2], dtype=pb.DTYPE_FLOAT32, data=data)
    for kernel in ("softmax", "favor+"):
        out = stub.Attend(pb.AttendRequest(query=tensor(zeros), key=tensor(zeros),
                                           value=tensor(values), kernel=kernel),
                          timeout=60)
        got = floats(out.output.data)
        assert list(out.output.shape) == [1, 1, 4, 2], out
        assert all(abs(got[2 * i] - 1.5) < 1e-3 and abs(got[2 * i + 1] - 15) < 1e-2
                   for i in range(4)), (kernel, got)


def check_reflection(channel):
    import reflection_pb2, reflection_pb2_grpc
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    answers = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
    names = {s.name for a in answers for s in a.list_services_response.service}
    assert {"favor.v1.Favor", "grpc.health.v1.Health"} <= names, names


def main():
    binary, repository, proto_root = sys.argv[1:4]
    import grpc
    with tempfile.TemporaryDirectory() as out:
        generate_stubs(proto_root, out)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        import health_pb2, health_pb2_grpc
        port, metrics_port = free_port(), free_port()
        log_path = os.path.join(out, "server.log")
        with open(log_path, "w") as log:
            server = subprocess.Popen(
                [binary, "--model_repository=" + repository, "--port=%d" % port,
                 "--metrics_port=%d" % metrics_port, "--http_port=0", "--threads=2",
                 "--drain_timeout_seconds=5", "--cpu_block_tokens=128",
                 "--cpu_sub_batch_tokens=1024"], stdout=log, stderr=subprocess.STDOUT)
        try:
            channel = grpc.insecure_channel("127.0.0.1:%d" % port)
            wait_serving(grpc, health_pb2, health_pb2_grpc, channel, server)
            check_calls(grpc, pb, rpc, channel)
            check_reflection(channel)
            body = urllib.request.urlopen(
                "http://127.0.0.1:%d/metrics" % metrics_port, timeout=10).read().decode()
            assert re.search(r'favor_requests_total\{code="OK",method="Embed",model="[^"]+"\} 2', body), body[:2000]
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=60) == 0, "favor-server did not exit 0"
        finally:
            if server.poll() is None:
                server.kill()
            print(open(log_path).read())
        text = open(log_path).read()
        for event in ("event=serving", "event=shutdown_started", "event=shutdown_complete"):
            assert event in text, event
        # The CPU schedule's flags reach every model.
        loaded = re.findall(r"event=model_loaded .*", text)
        assert loaded and all("block_tokens=128 sub_batch_tokens=1024" in line
                              for line in loaded), loaded
    print("python peer test: OK")


if __name__ == "__main__":
    main()
