#!/usr/bin/python3
"""Models change without dropped calls, on the real favor-server.

A repository holds `default` (revision v1) and `other`. Reference
embeddings of a few inputs come from a second server serving v1 and v2
side by side (a revision is a fingerprint of a folder's bytes, not of its
name). Then, while four callers embed with the default model non-stop:
  1. `default` becomes v2, `other` is removed and a corrupt `broken` is
     added; SIGHUP. Zero failed calls; every answer names the revision that
     computed it and equals that revision's reference; v1 then v2 answer;
     `broken` is in ListModels.failed_models and counted in
     favor_model_load_failures_total; `other` is gone; v1 is freed.
  2. `default`'s weights are truncated; SIGHUP. The load fails, v2 keeps
     serving (GetModel shows the load error), the server stays SERVING, and
     still no call fails.
  3. A folder whose weights are a sparse 256 GiB file is added; SIGHUP,
     and SIGTERM half a second into that pass: it exits with status 0 at
     once, not when the pass has read the file.

Usage: reload_test.py SERVER_BINARY FAVOR_MODEL_BINARY PROTO_ROOT
Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_peer_test as peer  # noqa: E402  (stubs, start-up)

INPUTS = [[1, 2, 3], [7] * 20, [5, 9, 11, 13, 200, 300]]
CALLERS = 4
TOLERANCE = 1e-5


def make_model(favor_model, folder, seed):
    subprocess.run([favor_model, "init", "--output=" + folder, "--layers=1",
                    "--hidden=64", "--heads=2", "--ffn=128", "--features=32",
                    "--seed=%d" % seed], check=True, stdout=subprocess.DEVNULL)


def start(binary, repository, log_path):
    server, _, port, metrics_port = peer.start_logged_server(
        [binary, "--model_repository=" + repository, "--port=0",
         "--metrics_port=0", "--http_port=0", "--threads=1",
         "--drain_timeout_seconds=5"], log_path)
    return server, port, metrics_port


def embed(stub, pb, index, model=""):
    return stub.Embed(pb.EmbedRequest(
        model=model, inputs=[pb.EmbedInput(token_ids=INPUTS[index])]), timeout=30)


def references(grpc, pb, rpc, binary, repository, log_path):
    """{revision: [values of each input]} from a server of every version."""
    server, port, _ = start(binary, repository, log_path)
    try:
        stub = rpc.FavorStub(grpc.insecure_channel("127.0.0.1:%d" % port))
        refs = {}
        for info in stub.ListModels(pb.ListModelsRequest(), timeout=10).models:
            refs[info.revision] = [list(embed(stub, pb, i, info.name).embeddings[0].values)
                                   for i in range(len(INPUTS))]
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    return refs


class Callers:
    """CALLERS threads embedding with the default model until stopped."""

    def __init__(self, grpc, pb, rpc, port):
        self.stub = rpc.FavorStub(grpc.insecure_channel("127.0.0.1:%d" % port))
        self.pb, self.grpc = pb, grpc
        self.answers, self.failures = [], []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        # Daemons: a failed check ends the test instead of waiting on them.
        self.threads = [threading.Thread(target=self.run, args=(k,), daemon=True)
                        for k in range(CALLERS)]

    def run(self, k):
        n = k
        while not self.stopping.is_set():
            index = n % len(INPUTS)
            n += 1
            try:
                answer = embed(self.stub, self.pb, index)
                got = (answer.model_revision, index,
                       list(answer.embeddings[0].values))
                with self.lock:
                    self.answers.append(got)
            except self.grpc.RpcError as error:
                with self.lock:
                    self.failures.append((error.code(), error.details()))

    def start(self):
        for t in self.threads:
            t.start()

    def count(self, revision):
        with self.lock:
            return sum(1 for a in self.answers if a[0] == revision)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join()


def wait_for(predicate, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def check_answers(callers, refs):
    assert not callers.failures, callers.failures[:5]
    for revision, index, values in callers.answers:
        assert revision in refs, "answer from unknown revision %r" % revision
        want = refs[revision][index]
        worst = max(abs(a - b) for a, b in zip(values, want))
        assert len(values) == len(want) and worst < TOLERANCE, (revision, index, worst)


def swap(repository, work, favor_model):
    """default: v1 -> v2 (folders renamed into place); other removed;
    broken added."""
    staged = os.path.join(repository, ".default.new")
    shutil.copytree(os.path.join(work, "v2"), staged)
    os.rename(os.path.join(repository, "default"), os.path.join(work, "old"))
    os.rename(staged, os.path.join(repository, "default"))
    shutil.rmtree(os.path.join(repository, "other"))
    broken = os.path.join(repository, "broken")
    make_model(favor_model, broken, 4)
    with open(os.path.join(broken, "model.safetensors"), "r+b") as f:
        f.truncate(100)


def main():
    binary, favor_model, proto_root = sys.argv[1:4]
    import grpc
    with tempfile.TemporaryDirectory() as work:
        peer.generate_stubs(proto_root, work)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        for name, seed in (("v1", 1), ("v2", 2), ("ref/x1", 1), ("ref/x2", 2),
                           ("repo/default", 1), ("repo/other", 3)):
            make_model(favor_model, os.path.join(work, name), seed)
        refs = references(grpc, pb, rpc, binary, os.path.join(work, "ref"),
                          os.path.join(work, "ref.log"))
        assert len(refs) == 2, refs
        repository = os.path.join(work, "repo")
        log_path = os.path.join(work, "server.log")
        server, port, metrics_port = start(binary, repository, log_path)
        stub = rpc.FavorStub(grpc.insecure_channel("127.0.0.1:%d" % port))
        try:
            v1 = stub.GetModel(pb.GetModelRequest(model="default"), timeout=10).model.revision
            assert v1 in refs, (v1, refs.keys())
            v2 = [r for r in refs if r != v1][0]
            callers = Callers(grpc, pb, rpc, port)
            callers.start()
            wait_for(lambda: callers.count(v1) >= 20, "v1 answers")
            swap(repository, work, favor_model)
            server.send_signal(signal.SIGHUP)
            wait_for(lambda: callers.count(v2) >= 20, "v2 answers")
            listed = stub.ListModels(pb.ListModelsRequest(), timeout=10)
            assert [m.name for m in listed.models] == ["default"], listed
            assert listed.models[0].revision == v2, listed
            assert [f.name for f in listed.failed_models] == ["broken"], listed
            assert listed.failed_models[0].error, listed
            wait_for(lambda: "event=model_revision_freed model=default revision=" + v1
                     in open(log_path).read(), "v1 freed")
            # A corrupt update of the serving model leaves it serving.
            with open(os.path.join(repository, "default", "model.safetensors"), "r+b") as f:
                f.truncate(1000)
            server.send_signal(signal.SIGHUP)
            wait_for(lambda: stub.GetModel(pb.GetModelRequest(), timeout=10).model.load_error,
                     "the failed reload in GetModel")
            settled = callers.count(v2)
            wait_for(lambda: callers.count(v2) >= settled + 20, "v2 answers after the failure")
            callers.stop()
            model = stub.GetModel(pb.GetModelRequest(), timeout=10).model
            assert model.revision == v2, model
            check_answers(callers, refs)
            import health_pb2, health_pb2_grpc
            status = health_pb2_grpc.HealthStub(grpc.insecure_channel(
                "127.0.0.1:%d" % port)).Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert status.status == health_pb2.HealthCheckResponse.SERVING, status
            body = urllib.request.urlopen(
                "http://127.0.0.1:%d/metrics" % metrics_port, timeout=10).read().decode()
            # `broken` failed at both SIGHUPs (SIGHUP retries a failed
            # folder, changed or not); `default` at the second.
            for model_name, failures in (("broken", 2), ("default", 1)):
                assert re.search(r'favor_model_load_failures_total\{model="%s"\} %d'
                                 % (model_name, failures), body), body[:3000]
            print("answers: %d from v1, %d from v2, 0 failed"
                  % (callers.count(v1), callers.count(v2)))
            # SIGTERM while a pass reads a huge folder (weights grown to a
            # sparse 256 GiB: minutes to read for the revision, no disk) is
            # answered at once, not after the pass (46 s for 64 GiB).
            slow = os.path.join(repository, "slow")
            make_model(favor_model, slow, 5)
            with open(os.path.join(slow, "model.safetensors"), "r+b") as f:
                f.truncate(256 << 30)
            started = open(log_path).read().count("event=model_reload_started")
            server.send_signal(signal.SIGHUP)
            wait_for(lambda: open(log_path).read().count(
                "event=model_reload_started") > started, "the third reload")
            time.sleep(0.5)
            server.send_signal(signal.SIGTERM)
            try:
                assert server.wait(timeout=20) == 0, "favor-server did not exit 0"
            except subprocess.TimeoutExpired:
                raise AssertionError("SIGTERM waited for the reload pass")
            # The pass was still reading when SIGTERM came (else this case
            # tests nothing).
            third = open(log_path).read().split("event=model_reload_started")[-1]
            assert "event=model_reload_done" not in third, third
        finally:
            if server.poll() is None:
                server.kill()
            print(open(log_path).read()[-6000:])
    print("reload test: OK")


if __name__ == "__main__":
    main()
