#!/usr/bin/python3
"""Soak: a long mixed load on one favor-server, sampled every 10 s.

Starts favor-server on MODEL_REPOSITORY and keeps CALLERS threads calling it
for --minutes: unary Embed of token ids and (when the default model has a
tokenizer) of text, short EmbedStreams, Attend over random Q, K, V, and a
sprinkle of bad inputs, cancelled calls and calls whose deadline is too short
to be met. With --reload_seconds, it sends SIGHUP that often (the server
reloads its repository in place; docs/server.md).

Every 10 s it records the server's resident memory (VmRSS), open file
descriptors, threads, and the p99 latency of the window's successful calls.
At the end it checks, over the samples after --warmup_minutes:
  - RSS grows at most 5% (last sample against the first after warm-up);
  - file descriptors and threads stay flat (at most +2 over the first);
  - the only codes are the expected ones for each kind of call.
Prints the table (markdown) and exits 1 when a check fails.

Usage: soak.py SERVER_BINARY MODEL_REPOSITORY PROTO_ROOT [--minutes=30]
       [--callers=8] [--reload_seconds=60] [--warmup_minutes=3] [-- SERVER_FLAGS]
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).
"""
import collections
import os
import random
import signal
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "service"))
import python_peer_test as peer  # noqa: E402  (stubs, server start)

SAMPLE_SECONDS = 10
WORDS = ("attention linear kernel random feature vector sequence token "
         "embedding server model batch queue memory stream reload").split()

# The codes each kind of call may end with. Cancelled and short-deadline
# calls may also finish in time.
EXPECTED = {
    "embed": {"OK"},
    "embed_text": {"OK"},
    "stream": {"OK"},
    "attend": {"OK"},
    "bad_input": {"INVALID_ARGUMENT"},
    "cancelled": {"OK", "CANCELLED"},
    "short_deadline": {"OK", "DEADLINE_EXCEEDED"},
}


def parse_flags(argv):
    flags = {"minutes": 30.0, "callers": 8, "reload_seconds": 60.0,
             "warmup_minutes": 3.0}
    positional, server_flags = [], []
    if "--" in argv:
        server_flags = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            name, value = arg[2:].split("=", 1)
            if name not in flags:
                sys.exit("soak: unknown flag --" + name)
            flags[name] = type(flags[name])(value)
        else:
            positional.append(arg)
    if len(positional) != 3:
        sys.exit(__doc__)
    return positional, flags, server_flags


class Tally:
    """Codes per kind, and the latencies of successful calls per window."""

    def __init__(self):
        self.mu = threading.Lock()
        self.codes = collections.Counter()
        self.latencies = []

    def add(self, kind, code, seconds):
        with self.mu:
            self.codes[(kind, code)] += 1
            if code == "OK" and kind in ("embed", "embed_text", "stream",
                                         "attend"):
                self.latencies.append(seconds)

    def take_latencies(self):
        with self.mu:
            taken, self.latencies = self.latencies, []
        return taken


class Caller(threading.Thread):
    def __init__(self, grpc, pb, stub, vocab_size, has_text, tally, stop, seed):
        super().__init__(daemon=True)
        self.grpc, self.pb, self.stub = grpc, pb, stub
        self.vocab_size, self.has_text = vocab_size, has_text
        self.tally, self.stop, self.rng = tally, stop, random.Random(seed)

    def ids(self, n):
        return [self.rng.randrange(1000, self.vocab_size) for _ in range(n)]

    def embed_request(self):
        pb = self.pb
        inputs = [pb.EmbedInput(token_ids=self.ids(self.rng.choice((16, 128, 512, 2048))))
                  for _ in range(self.rng.randint(1, 4))]
        return pb.EmbedRequest(inputs=inputs)

    def attend_request(self):
        pb = self.pb
        batch, heads, length, dim = 2, 3, self.rng.choice((64, 256)), 16

        def tensor(n):
            values = [self.rng.gauss(0, 1) for _ in range(batch * heads * n * dim)]
            return pb.Tensor(shape=[batch, heads, n, dim], dtype=pb.DTYPE_FLOAT32,
                             data=struct.pack("<%df" % len(values), *values))
        return pb.AttendRequest(query=tensor(length), key=tensor(length),
                                value=tensor(length), num_random_features=64,
                                projection_seed=self.rng.randrange(1 << 30))

    def one(self):
        pb, rng = self.pb, self.rng
        kind = rng.choices(list(EXPECTED), weights=(40, 15 if self.has_text else 0,
                                                    15, 15, 5, 5, 5))[0]
        start = time.monotonic()
        code = "OK"
        try:
            if kind == "embed":
                self.stub.Embed(self.embed_request(), timeout=60)
            elif kind == "embed_text":
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 400)))
                self.stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(text=text)]),
                                timeout=60)
            elif kind == "stream":
                requests = [pb.EmbedStreamRequest(request_id=str(i),
                                                  request=self.embed_request())
                            for i in range(3)]
                for response in self.stub.EmbedStream(iter(requests), timeout=60):
                    if response.HasField("error"):
                        code = "STREAM_ERROR_%d" % response.error.code
            elif kind == "attend":
                self.stub.Attend(self.attend_request(), timeout=60)
            elif kind == "bad_input":
                self.stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(
                    token_ids=[self.vocab_size + 5])]), timeout=60)
            elif kind == "cancelled":
                future = self.stub.Embed.future(self.embed_request(), timeout=60)
                time.sleep(rng.uniform(0, 0.05))
                future.cancel()
                future.result()
            else:  # short_deadline
                self.stub.Embed(self.embed_request(), timeout=rng.uniform(0.001, 0.02))
        except self.grpc.FutureCancelledError:
            code = "CANCELLED"
        except self.grpc.RpcError as error:
            code = error.code().name
        self.tally.add(kind, code, time.monotonic() - start)

    def run(self):
        while not self.stop.is_set():
            self.one()


def sample(pid):
    status = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            name, _, value = line.partition(":")
            status[name] = value.split()[0] if value.split() else ""
    return {"rss_mb": int(status["VmRSS"]) / 1024.0,
            "threads": int(status["Threads"]),
            "fds": len(os.listdir("/proc/%d/fd" % pid))}


def p99(values):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(0.99 * len(values)))]


def check(samples, warmup_minutes, tally):
    failures = []
    after = [s for s in samples if s["t"] >= warmup_minutes * 60]
    if len(after) >= 2:
        first, last = after[0], after[-1]
        growth = last["rss_mb"] / first["rss_mb"] - 1
        print("RSS after warm-up: %.1f -> %.1f MB (%+.1f%%); fds %d..%d; threads %d..%d"
              % (first["rss_mb"], last["rss_mb"], 100 * growth,
                 min(s["fds"] for s in after), max(s["fds"] for s in after),
                 min(s["threads"] for s in after), max(s["threads"] for s in after)))
        if growth > 0.05:
            failures.append("RSS grew %.1f%% after warm-up" % (100 * growth))
        for key in ("fds", "threads"):
            if max(s[key] for s in after) > first[key] + 2:
                failures.append("%s grew from %d to %d" % (
                    key, first[key], max(s[key] for s in after)))
    else:
        failures.append("too few samples after warm-up")
    for (kind, code), count in sorted(tally.codes.items()):
        expected = code in EXPECTED[kind]
        print("%-15s %-20s %8d%s" % (kind, code, count, "" if expected else "  UNEXPECTED"))
        if not expected:
            failures.append("%d %s calls ended %s" % (count, kind, code))
    return failures


def main():
    (binary, repository, proto_root), flags, server_flags = parse_flags(sys.argv[1:])
    import grpc
    with tempfile.TemporaryDirectory() as out:
        peer.generate_stubs(proto_root, out)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        server, _, port, _ = peer.start_logged_server(
            [binary, "--model_repository=" + repository, "--port=0",
             "--metrics_port=0", "--http_port=0"] + server_flags,
            os.path.join(out, "server.log"))
        stop = threading.Event()
        try:
            channel = grpc.insecure_channel("127.0.0.1:%d" % port)
            stub = rpc.FavorStub(channel)
            model = stub.GetModel(pb.GetModelRequest(), timeout=30).model
            vocab_size = model.config.vocab_size
            has_text = bool(model.config.tokenizer.kind)
            tally = Tally()
            callers = [Caller(grpc, pb, stub, vocab_size, has_text, tally, stop, seed)
                       for seed in range(flags["callers"])]
            for caller in callers:
                caller.start()
            start = time.monotonic()
            next_reload = start + flags["reload_seconds"]
            samples = []
            print("| t (s) | RSS (MB) | fds | threads | p99 (ms) | calls |")
            print("| ---: | ---: | ---: | ---: | ---: | ---: |")
            while time.monotonic() - start < flags["minutes"] * 60:
                time.sleep(SAMPLE_SECONDS)
                now = time.monotonic()
                if flags["reload_seconds"] > 0 and now >= next_reload:
                    server.send_signal(signal.SIGHUP)
                    next_reload += flags["reload_seconds"]
                assert server.poll() is None, "favor-server exited"
                latencies = tally.take_latencies()
                row = dict(sample(server.pid), t=now - start,
                           p99_ms=1000 * p99(latencies), calls=len(latencies))
                samples.append(row)
                print("| %.0f | %.1f | %d | %d | %.1f | %d |" % (
                    row["t"], row["rss_mb"], row["fds"], row["threads"],
                    row["p99_ms"], row["calls"]), flush=True)
            stop.set()
            for caller in callers:
                caller.join(timeout=120)
            failures = check(samples, flags["warmup_minutes"], tally)
        finally:
            stop.set()
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except Exception:  # noqa: BLE001  (a hung server: kill it)
                server.kill()
    for failure in failures:
        print("soak: FAILED: " + failure)
    print("soak: " + ("FAILED" if failures else "OK"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
