#!/usr/bin/python3
"""EmbedStream's per-message deadline (timeout_micros) enforced by the
server, seen from a peer with no timer of its own.

favor::client enforces a message's deadline itself (client/src/
embed_streamer.cc), so a server that stopped honouring timeout_micros
would pass every test that goes through it. Here Python's grpcio opens the
stream with no gRPC deadline and never times anything out: whatever
DEADLINE_EXCEEDED it reads is an in-stream answer the server wrote.

On the real favor-server (default model, one batch worker, a token budget
per batch that the long input fills on its own), one stream carries:
  long      32,768 tokens, no timeout: computes for a second or more;
  queued    sent once the long input is computing, timeout 200 ms: waits
            behind it and is answered DEADLINE_EXCEEDED (code 4) when its
            deadline passes, before the long input's answer;
  expired   timeout 1 µs: its deadline passes before it is queued, answered
            DEADLINE_EXCEEDED without being computed;
  zero      timeout 0 (only the stream's deadline, here none): answered;
  maximal   timeout 2^63 - 1 µs, the largest accepted: answered (the
            deadline saturates rather than overflowing into the past);
  negative  timeout -1: INVALID_ARGUMENT naming timeout_micros;
  after     no timeout, sent after the failures: answered.
Every message is answered exactly once, the answered embeddings equal a
unary Embed of the same input, and the stream ends with status OK once the
peer half-closes it. Then SIGTERM and exit 0.

Usage: stream_deadline_peer_test.py SERVER_BINARY MODEL_REPOSITORY PROTO_ROOT
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).
"""
import os
import queue
import re
import signal
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_peer_test as peer  # noqa: E402  (stubs, start-up)

LONG_TOKENS = 32768
QUEUED_TIMEOUT_MICROS = 200_000
MAX_TIMEOUT_MICROS = 2**63 - 1
DEADLINE_EXCEEDED = 4
INVALID_ARGUMENT = 3


def dequeued(metrics_port):
    """Requests taken from the queue into a batch so far (the queue
    duration histogram's count, observed at dequeue)."""
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port,
                                  timeout=10).read().decode()
    return sum(float(v) for v in re.findall(
        r"^favor_queue_duration_seconds_count(?:\{[^}]*\})? (\S+)$", body, re.M))


class Stream:
    """One EmbedStream with no deadline: messages in through a queue,
    answers collected by a reader thread in arrival order."""

    def __init__(self, stub):
        self._requests = queue.Queue()
        self.answers = []  # (request_id, response, arrival time)
        self.done = threading.Event()
        self.error = None
        self._call = stub.EmbedStream(iter(self._requests.get, None))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for answer in self._call:
                self.answers.append((answer.request_id, answer, time.monotonic()))
        except Exception as error:  # noqa: BLE001  (reported by the test)
            self.error = error
        self.done.set()

    def send(self, message):
        self._requests.put(message)

    def close(self):
        self._requests.put(None)

    def wait_for(self, request_id, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if any(rid == request_id for rid, _, _ in self.answers):
                return
            assert not self.done.is_set(), ("stream ended", self.error)
            time.sleep(0.01)
        raise AssertionError("no answer to %s within %d s" % (request_id, seconds))

    def code(self):
        return self._call.code()


def check_stream(grpc, pb, rpc, port, metrics_port):
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    stub = rpc.FavorStub(channel)
    ids = [(i * 7919) % 29000 + 1000 for i in range(LONG_TOKENS)]
    short = [101, 2023, 2003, 1037, 3231, 102]
    inputs = {"long": ids, "queued": short, "expired": short, "zero": short[:4],
              "maximal": short[:5], "negative": short, "after": short[1:]}
    message = lambda rid, timeout: pb.EmbedStreamRequest(
        request_id=rid, timeout_micros=timeout,
        request=pb.EmbedRequest(inputs=[pb.EmbedInput(token_ids=inputs[rid])]))

    before = dequeued(metrics_port)
    stream = Stream(stub)
    stream.send(message("long", 0))
    # Wait until the long input has left the queue for the batch worker.
    deadline = time.monotonic() + 60
    while dequeued(metrics_port) == before:
        assert time.monotonic() < deadline, "the long input never left the queue"
        time.sleep(0.01)
    assert stream.answers == [], "the long input was answered too soon"
    stream.send(message("queued", QUEUED_TIMEOUT_MICROS))
    stream.send(message("expired", 1))
    stream.wait_for("expired", 60)
    stream.send(message("zero", 0))
    stream.send(message("maximal", MAX_TIMEOUT_MICROS))
    stream.send(message("negative", -1))
    stream.send(message("after", 0))
    for rid in inputs:
        stream.wait_for(rid, 120)
    stream.close()
    assert stream.done.wait(60), "the stream did not end after the half-close"
    assert stream.error is None, stream.error
    assert stream.code() == grpc.StatusCode.OK, stream.code()

    got = [rid for rid, _, _ in stream.answers]
    assert sorted(got) == sorted(inputs), "answered %s" % got
    answers = {rid: (answer, at) for rid, answer, at in stream.answers}
    for rid in ("queued", "expired"):
        answer = answers[rid][0]
        assert answer.WhichOneof("result") == "error", (rid, answer)
        assert answer.error.code == DEADLINE_EXCEEDED, (rid, answer.error)
    # Answered while the long input still computed: refused in the queue
    # when its deadline passed, not computed and refused afterwards.
    assert answers["queued"][1] < answers["long"][1], got
    assert answers["expired"][1] < answers["long"][1], got
    negative = answers["negative"][0]
    assert negative.WhichOneof("result") == "error", negative
    assert negative.error.code == INVALID_ARGUMENT, negative.error
    assert "timeout_micros" in negative.error.message, negative.error
    for rid in ("long", "zero", "maximal", "after"):
        answer = answers[rid][0]
        assert answer.WhichOneof("result") == "response", (rid, answer)
        unary = stub.Embed(pb.EmbedRequest(inputs=[pb.EmbedInput(
            token_ids=inputs[rid])]), timeout=120)
        streamed = answer.response.embeddings[0].values
        assert len(streamed) == len(unary.embeddings[0].values) > 0, rid
        assert max(abs(a - b) for a, b in
                   zip(streamed, unary.embeddings[0].values)) < 1e-4, rid
    print("answers in order: %s" % got)


def main():
    binary, repository, proto_root = sys.argv[1:4]
    import grpc
    with tempfile.TemporaryDirectory() as work:
        peer.generate_stubs(proto_root, work)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        log_path = os.path.join(work, "server.log")
        server, _, port, metrics_port = peer.start_logged_server(
            [binary, "--model_repository=" + repository, "--port=0",
             "--metrics_port=0", "--http_port=0", "--threads=2",
             "--max_batch_tokens=%d" % LONG_TOKENS], log_path)
        try:
            check_stream(grpc, pb, rpc, port, metrics_port)
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=60) == 0, "favor-server did not exit 0"
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            print(open(log_path).read()[-2000:])
    print("stream deadline peer test: OK")


if __name__ == "__main__":
    main()
