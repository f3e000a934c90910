#!/usr/bin/python3
"""Peak resident memory of favor-server per Embed size, against the memory
budget's estimate (docs/performance.md, "The memory budget").

For each size, starts a fresh favor-server, reads its resident set (VmRSS
in /proc/PID/status) once it serves, sends one Embed call of that many
random tokens (one input, or --inputs of them), then reads the process's
peak resident set (VmHWM). Prints the resident set at start, the peak, the
peak's growth over the start, and the estimate the server logs for one
input of that size (event=memory_estimate, with a batch's overhead), so
that the formula can be checked against what the kernel measured. The
budget also counts, once, the allocator's cache (256 MiB), which the growth
may partly include.

Usage: bench/embed_memory_peak.py [--server build/server/favor-server]
  [--models build/models] [--sizes 16384,65536,262144] [--inputs 1]
  (each size is per input; --inputs of them in one call)
  [--token_embeddings] [-- extra favor-server flags]
Needs Debian's python3-grpcio and python3-protobuf; stubs are generated at
run time from proto/ as tests/service/python_peer_test.py does.
"""
import argparse
import os
import random
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "service"))
import python_peer_test as peer  # noqa: E402


def status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % field, f.read(), re.M).group(1))


def start_server(args, log_path):
    server, _, port, _ = peer.start_logged_server(
        [args.server, "--model_repository=" + args.models, "--port=0",
         "--metrics_port=0", "--http_port=0"] + args.extra, log_path)
    return server, port


def measure(args, grpc, pb, rpc, work, size):
    log_path = os.path.join(work, "server-%d.log" % size)
    server, port = start_server(args, log_path)
    try:
        time.sleep(0.5)  # let start-up's threads settle
        start_kb = status_kb(server.pid, "VmRSS")
        rng = random.Random(size)
        per_input = size
        request = pb.EmbedRequest(
            inputs=[pb.EmbedInput(token_ids=[rng.randrange(1000, 30000)
                                             for _ in range(per_input)])
                    for _ in range(args.inputs)],
            include_token_embeddings=args.token_embeddings)
        began = time.time()
        stub = rpc.FavorStub(grpc.insecure_channel(
            "127.0.0.1:%d" % port,
            options=[("grpc.max_receive_message_length", -1)]))
        stub.Embed(request, timeout=1800)
        seconds = time.time() - began
        peak_kb = status_kb(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait()
    return start_kb, peak_kb, seconds, estimate_of(
        open(log_path).read(), per_input, args.inputs, args.token_embeddings)


def estimate_of(log, size, inputs, token_embeddings):
    """The server's estimate for `inputs` inputs of `size` tokens (logged
    for powers of two) plus a batch's overhead; None for other sizes, or
    with token embeddings (12·H bytes per token more, not logged)."""
    if token_embeddings:
        return None
    match = re.search(r"event=memory_estimate .*input_bytes=(\S+) "
                      r"batch_overhead_bytes=(\d+)", log)
    if not match:
        return None
    logged = dict(item.split(":") for item in match.group(1).split(","))
    if str(size) not in logged:
        return None
    return inputs * int(logged[str(size)]) + int(match.group(2))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default=os.path.join(ROOT, "build/server/favor-server"))
    parser.add_argument("--models", default=os.path.join(ROOT, "build/models"))
    parser.add_argument("--sizes", default="16384,65536,262144")
    parser.add_argument("--inputs", type=int, default=1)
    parser.add_argument("--token_embeddings", action="store_true")
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    import grpc
    with tempfile.TemporaryDirectory() as work:
        peer.generate_stubs(os.path.join(ROOT, "proto"), work)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        print("%10s %10s %10s %11s %14s %12s %7s" % (
            "tokens", "start MiB", "peak MiB", "growth MiB", "growth B/tok",
            "estimate MiB", "s"))
        for size in [int(s) for s in args.sizes.split(",")]:
            start_kb, peak_kb, seconds, estimate = measure(
                args, grpc, pb, rpc, work, size)
            growth = (peak_kb - start_kb) * 1024
            print("%10d %10.1f %10.1f %11.1f %14.0f %12s %7.1f" % (
                size * args.inputs, start_kb / 1024, peak_kb / 1024,
                growth / 2**20, growth / (size * args.inputs),
                "%.1f" % (estimate / 2**20) if estimate else "-", seconds))


if __name__ == "__main__":
    main()
