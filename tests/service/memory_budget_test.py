#!/usr/bin/python3
"""A flood of large requests against a small memory budget, on the real
favor-server and the default model: 16 × 256k tokens under 3 GB, scaled
down so that it runs in well under a minute on two cores.

1. A first server (a budget of 100 GB, never binding) logs what the budget
   counts once (event=memory_budget: resident_bytes, allocator_cache_bytes)
   and the model's estimates (event=memory_estimate: the bytes one input of
   32,768 tokens adds to a batch, and a batch's overhead). The budget is set
   from them so that two such inputs fit in a batch and three do not.
2. A second server gets that budget and a token budget of 262,144 per batch
   (so that without the memory budget all eight inputs below would run in
   one batch, about 1.6 GB past the start). Eight concurrent Embed calls of
   32,768 tokens each, and one of 262,144 tokens that can never fit:
     - every call is answered, OK or RESOURCE_EXHAUSTED; the large one
       RESOURCE_EXHAUSTED at once, naming the budget and its estimate; the
       eight OK (they wait for room within their deadlines), in batches of
       at most two inputs;
     - the process is never killed, and its peak resident set (VmHWM)
       stays under the budget plus 15%;
     - /metrics shows the budget, and nothing reserved once all is done;
     - SIGTERM ends it with exit status 0.

Usage: memory_budget_test.py SERVER_BINARY MODEL_REPOSITORY PROTO_ROOT
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).
"""
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_peer_test as peer  # noqa: E402  (stubs, start-up)

INPUT_TOKENS = 32768
CALLS = 8
FITTING_INPUTS = 2.5  # two inputs fit in the batch capacity, three do not
HUGE_TOKENS = 262144
PEAK_MARGIN = 1.15


def start_server(binary, repository, log_path, flags):
    server, text, port, metrics_port = peer.start_logged_server(
        [binary, "--model_repository=" + repository, "--port=0",
         "--metrics_port=0", "--http_port=0", "--threads=2"] + flags, log_path)
    return server, port, metrics_port, text


def stop(server):
    server.send_signal(signal.SIGTERM)
    return server.wait(timeout=60)


def budget_from_first_server(binary, repository, work):
    """What the budget counts once and the 32k input's estimate."""
    server, _, _, log = start_server(binary, repository,
                                     os.path.join(work, "first.log"),
                                     ["--max_memory_bytes=100000000000"])
    assert stop(server) == 0
    counted = re.search(r"event=memory_budget .*resident_bytes=(\d+) "
                        r"allocator_cache_bytes=(\d+)", log)
    estimate = re.search(r"event=memory_estimate .*input_bytes=(\S+) "
                         r"batch_overhead_bytes=(\d+)", log)
    inputs = dict(item.split(":") for item in estimate.group(1).split(","))
    input_bytes = int(inputs[str(INPUT_TOKENS)])
    overhead = int(estimate.group(2))
    resident = int(counted.group(1)) + int(counted.group(2))
    budget = resident + overhead + int(FITTING_INPUTS * input_bytes)
    print("resident %d + overhead %d + %.1f × %d-token input %d = budget %d"
          % (resident, overhead, FITTING_INPUTS, INPUT_TOKENS, input_bytes, budget))
    return budget


def flood(grpc, pb, rpc, port):
    """Eight 32k calls and one that can never fit, all at once."""
    stub = rpc.FavorStub(grpc.insecure_channel("127.0.0.1:%d" % port))
    rng = random.Random(0)
    results = {}

    def call(name, tokens):
        request = pb.EmbedRequest(inputs=[pb.EmbedInput(
            token_ids=[rng.randrange(1000, 30000) for _ in range(tokens)])])
        try:
            stub.Embed(request, timeout=300)
            results[name] = ("OK", "")
        except grpc.RpcError as error:
            results[name] = (error.code().name, error.details())

    threads = [threading.Thread(target=call, args=("call%d" % i, INPUT_TOKENS))
               for i in range(CALLS)]
    threads.append(threading.Thread(target=call, args=("huge", HUGE_TOKENS)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def metric(metrics_port, name):
    """One series' value; `name` may carry its labels."""
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port,
                                  timeout=10).read().decode()
    return float(re.search(r"^%s (\S+)$" % re.escape(name), body, re.M).group(1))


def main():
    binary, repository, proto_root = sys.argv[1:4]
    import grpc
    with tempfile.TemporaryDirectory() as work:
        peer.generate_stubs(proto_root, work)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        budget = budget_from_first_server(binary, repository, work)
        log_path = os.path.join(work, "server.log")
        server, port, metrics_port, _ = start_server(
            binary, repository, log_path,
            ["--max_memory_bytes=%d" % budget, "--max_batch_tokens=262144",
             "--max_queue_delay_micros=200000"])
        try:
            started = time.time()
            results = flood(grpc, pb, rpc, port)
            seconds = time.time() - started
            assert server.poll() is None, "favor-server died: %s" % server.returncode
            with open("/proc/%d/status" % server.pid) as f:
                peak = int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024
            assert metric(metrics_port, "favor_memory_budget_bytes") == budget
            # A batch gives its reservation back just after its answers
            # (which may still hold its results), so a caller can hold its
            # answer a moment before the gauge falls.
            deadline = time.time() + 10
            while (metric(metrics_port, "favor_memory_reserved_bytes") != 0
                   and time.time() < deadline):
                time.sleep(0.01)
            assert metric(metrics_port, "favor_memory_reserved_bytes") == 0
            batches = metric(metrics_port,
                             'favor_batch_size_requests_count{model="default"}')
            assert stop(server) == 0, "favor-server did not exit 0"
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        print("answers in %.1f s: %s" % (seconds, {k: v[0] for k, v in sorted(results.items())}))
        print("peak RSS %d bytes = %.2f × the budget of %d; %d batches"
              % (peak, peak / budget, budget, batches))
        code, message = results.pop("huge")
        assert code == "RESOURCE_EXHAUSTED", (code, message)
        assert "memory budget (max_memory_bytes=%d)" % budget in message, message
        assert "needs an estimated" in message, message
        assert all(code == "OK" for code, _ in results.values()), results
        assert peak <= PEAK_MARGIN * budget, (
            "peak RSS %d over the budget %d + 15%%" % (peak, budget))
        assert batches >= CALLS / 2, "%d batches: over two inputs in one" % batches
        assert "event=shutdown_complete" in open(log_path).read()
    print("memory budget test: OK")


if __name__ == "__main__":
    main()
