#!/usr/bin/python3
"""The memory budget's estimate against the kernel's measured peak, for
every kind of Embed request: what docs/performance.md ("The memory
budget") checks by hand for plain inputs, here for each output option,
including those that keep per-token vectors (token embeddings, late-chunking
spans, POOLING_NONE) and a batch that mixes a plain input with one that
keeps its token vectors.

1. The server's own estimate of each request: a server whose memory
   budget leaves less room than any of them refuses each with
   RESOURCE_EXHAUSTED, "needs an estimated N bytes" (the request's inputs
   plus a batch's overhead, which it logs as event=memory_estimate).
2. The measured cost: per kind, a fresh favor-server (default model,
   float32, --threads=2), its resident set (VmRSS) once it serves, the
   kind's calls (concurrent ones formed into one batch, checked on
   /metrics), then its peak resident set (VmHWM).
Two checks per kind:
  - the growth stays within the estimate of its batch plus the one excess
    docs/performance.md measures and accounts for elsewhere: the rotary
    tables' float64 temporaries, 12·d bytes per token, freed to the
    allocator's cache that the budget counts once;
  - what the kind costs over a plain batch of the same tokens (growth
    minus the plain batch's growth) is within what its estimate adds over
    the plain batch's: an estimate that forgot a kind's token vectors
    fails here even where the plain terms' margin would hide it.
A slack of 4 MiB covers the kernel's page granularity and gRPC's buffers.
Each kind runs twice, on fresh servers: the first check takes the larger
growth (the estimate must hold in every run), the second compares the
smaller growths. A peak moves by a megabyte or two from run to run with how
the threads' allocations overlap (under ctest -j, a kind that does the
same work as the plain batch once peaked 4.3 MiB above it); the smaller of
two runs is the steadier measure of what a kind itself costs.

Usage: memory_estimate_kinds_test.py SERVER_BINARY MODEL_REPOSITORY PROTO_ROOT
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).
"""
import os
import random
import re
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_peer_test as peer  # noqa: E402  (stubs, start-up)

TOKENS = 16384
SLACK_BYTES = 4 << 20
RUNS = 2  # fresh servers per kind
# Room for none of the requests: every one is refused, naming its estimate.
BUDGET_BYTES = 600_000_000
MIB = float(1 << 20)


def status_bytes(pid, field):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % field, f.read(), re.M).group(1)) * 1024


def kinds(pb):
    """name -> (requests sent at once, the plain kind of the same tokens to
    compare with, or None for the plain kinds themselves)."""
    rng = random.Random(7)
    ids = lambda n: [rng.randrange(1000, 30000) for _ in range(n)]
    one = lambda **fields: pb.EmbedRequest(
        inputs=[pb.EmbedInput(token_ids=ids(TOKENS))], **fields)
    spans = [pb.Span(begin=b, end=b + 16) for b in range(0, TOKENS, 16)][:1024]
    with_spans = lambda: pb.EmbedRequest(inputs=[pb.EmbedInput(
        token_ids=ids(TOKENS), spans=spans)])
    return {
        "plain": ([one()], None),
        "cls pooling, dimensions 64": (
            [one(pooling=pb.POOLING_CLS, dimensions=64)], "plain"),
        "embedding types int8, binary": (
            [one(embedding_types=[pb.EMBEDDING_TYPE_INT8,
                                  pb.EMBEDDING_TYPE_BINARY])], "plain"),
        "token embeddings": ([one(include_token_embeddings=True)], "plain"),
        "token embeddings bfloat16": (
            [one(include_token_embeddings=True,
                 token_embeddings_dtype=pb.DTYPE_BFLOAT16)], "plain"),
        "spans (1,024)": ([with_spans()], "plain"),
        "pooling none": ([one(pooling=pb.POOLING_NONE)], "plain"),
        "plain × 2, one batch": ([one(), one()], None),
        "token embeddings × 2, one batch": (
            [one(include_token_embeddings=True),
             one(include_token_embeddings=True)], "plain × 2, one batch"),
        "plain + token embeddings, one batch": (
            [one(), one(include_token_embeddings=True)], "plain × 2, one batch"),
        "plain + spans, one batch": ([one(), with_spans()], "plain × 2, one batch"),
    }


def start(binary, repository, work, flags):
    return peer.start_logged_server(
        [binary, "--model_repository=" + repository, "--port=0",
         "--metrics_port=0", "--http_port=0", "--threads=2"] + flags,
        os.path.join(work, "server.log"))


def server_estimates(grpc, pb, rpc, binary, repository, work, all_kinds):
    """name -> the server's estimate of the kind's batch (its requests'
    inputs and one batch overhead), read from its refusals; and the model's
    hidden size and head size."""
    server, log, port, _ = start(binary, repository, work,
                                 ["--max_memory_bytes=%d" % BUDGET_BYTES])
    try:
        overhead = int(re.search(r"event=memory_estimate .*"
                                 r"batch_overhead_bytes=(\d+)", log).group(1))
        stub = rpc.FavorStub(grpc.insecure_channel("127.0.0.1:%d" % port))
        config = stub.ListModels(pb.ListModelsRequest(), timeout=30).models[0].config
        estimates = {}
        for name, (requests, _) in all_kinds.items():
            total = overhead
            for request in requests:
                try:
                    stub.Embed(request, timeout=60)
                    raise AssertionError("%s: not refused by a budget of %d"
                                         % (name, BUDGET_BYTES))
                except grpc.RpcError as error:
                    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (
                        name, error.code(), error.details())
                    needed = int(re.search(r"needs an estimated (\d+) bytes",
                                           error.details()).group(1))
                    total += needed - overhead
            estimates[name] = total
    finally:
        server.terminate()
        server.wait()
    return estimates, config.hidden_size, config.hidden_size // config.num_attention_heads


def measure(grpc, rpc, binary, repository, work, name, requests):
    """The growth of a fresh server's resident set to its peak over the
    kind's calls, run as one batch."""
    server, _, port, metrics_port = start(
        binary, repository, work,
        ["--max_batch_tokens=%d" % (TOKENS * len(requests)),
         # Concurrent calls wait for each other and share one batch.
         "--max_queue_delay_micros=%d" % (2_000_000 if len(requests) > 1 else 0)])
    try:
        time.sleep(0.5)  # let start-up's threads settle
        start_bytes = status_bytes(server.pid, "VmRSS")
        stub = rpc.FavorStub(grpc.insecure_channel(
            "127.0.0.1:%d" % port, options=[("grpc.max_receive_message_length", -1)]))
        errors = []

        def call(request):
            try:
                stub.Embed(request, timeout=300)
            except grpc.RpcError as error:
                errors.append((error.code(), error.details()))
        threads = [threading.Thread(target=call, args=(r,)) for r in requests]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, (name, errors)
        peak = status_bytes(server.pid, "VmHWM")
        batches = metric(metrics_port, 'favor_batch_size_requests_count{model="default"}')
        assert batches == 1, (name, "%d batches, not one" % batches)
    finally:
        server.terminate()
        server.wait()
    return start_bytes, peak


def metric(metrics_port, name):
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port,
                                  timeout=10).read().decode()
    return float(re.search(r"^%s (\S+)$" % re.escape(name), body, re.M).group(1))


def main():
    binary, repository, proto_root = sys.argv[1:4]
    import grpc
    with tempfile.TemporaryDirectory() as work:
        peer.generate_stubs(proto_root, work)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        all_kinds = kinds(pb)
        estimates, hidden, head_dim = server_estimates(
            grpc, pb, rpc, binary, repository, work, all_kinds)
        failures = []
        least_growths = {}
        print("%-36s %8s %8s %8s %9s %8s %10s %10s" % (
            "kind (MiB)", "start", "peak", "growth", "estimate", "excess",
            "over plain", "estimated"))
        for name, (requests, plain) in all_kinds.items():
            runs = [measure(grpc, rpc, binary, repository, work, name, requests)
                    for _ in range(RUNS)]
            # The run that grew most, for the row and the first check.
            start_bytes, peak = max(runs, key=lambda run: run[1] - run[0])
            growth = peak - start_bytes
            least = least_growths[name] = min(p - s for s, p in runs)
            estimate = estimates[name]
            rotary = len(requests) * TOKENS * 12 * head_dim
            over, estimated = ((least - least_growths[plain],
                                estimate - estimates[plain])
                               if plain else (0, 0))
            print("%-36s %8.1f %8.1f %8.1f %9.1f %8.1f %10.1f %10.1f" % (
                name, start_bytes / MIB, peak / MIB, growth / MIB,
                estimate / MIB, (growth - estimate) / MIB, over / MIB,
                estimated / MIB))
            if growth > estimate + rotary + SLACK_BYTES:
                failures.append(
                    "%s: grew %.1f MiB, over its estimate %.1f + rotary "
                    "tables %.1f + slack %.1f" % (name, growth / MIB, estimate / MIB,
                                                  rotary / MIB, SLACK_BYTES / MIB))
            if over > estimated + SLACK_BYTES:
                failures.append(
                    "%s: costs %.1f MiB over '%s', its estimate only %.1f more"
                    % (name, over / MIB, plain, estimated / MIB))
        print("hidden %d, head %d, %d tokens per input" % (hidden, head_dim, TOKENS))
        assert not failures, "\n".join(failures)
    print("memory estimate per request kind: OK")


if __name__ == "__main__":
    main()
