#!/usr/bin/python3
"""favor-bench against a real favor-server (two small random models).

Short runs of every mode (closed and open loop, unary and streaming, bounded
by duration or by count), their --json reports parsed and checked: the
counts add up, percentiles are ordered, no call failed (so token ids stayed
below the vocabulary and lengths within the limits), throughput matches the
counts, and the server's own view from /metrics agrees with the client's.
Then bad usage: the gRPC code as exit status and one stderr line; and a
server killed mid-run: exit 14.

Usage: bench_end_to_end_test.py FAVOR_BENCH FAVOR_SERVER FAVOR_MODEL FIXTURE_DIR
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time


def check_closed_loop(tool, server):
    report = bench(tool, server, [
        "--concurrency=2", "--lengths=uniform:4:40", "--duration=1s",
        "--warmup=300ms", "--metrics_address=" + server.metrics_address])
    assert report["config"]["mode"] == "closed_loop", report["config"]
    assert report["config"]["concurrency"] == 2, report["config"]
    assert report["warmup_calls"] > 0, report
    assert 4 * report["sequences"] <= report["tokens"] <= 40 * report["sequences"]
    assert 0.9 < report["measured_seconds"] < 5, report["measured_seconds"]
    check_server_view(report)


def check_count_bounded_streaming(tool, server):
    report = bench(tool, server, [
        "--streaming", "--concurrency=4", "--requests=40", "--duration=0",
        "--inputs_per_call=3", "--lengths=fixed:16", "--warmup=0",
        "--metrics_address=" + server.metrics_address])
    assert report["requests"]["total"] == 40, report["requests"]
    assert report["sequences"] == 120 and report["tokens"] == 120 * 16, report
    assert report["warmup_calls"] == 0, report
    check_server_view(report)


def check_open_loop(tool, server):
    for transport in ([], ["--streaming"]):
        report = bench(tool, server, [
            "--request_rate=100", "--lengths=lognormal:16:0.5", "--duration=1s",
            "--warmup=200ms", "--seed=3"] + transport)
        config = report["config"]
        assert config["mode"] == "open_loop", config
        assert config["request_rate_per_second"] == 100, config
        assert config["streaming"] == bool(transport), config
        # Poisson(100) calls in one second: far inside [50, 160].
        assert 50 <= report["requests"]["total"] <= 160, report["requests"]


def check_vocabulary_and_limits(tool, server):
    """tiny has 50 ids and at most 64 tokens per input: every draw of a
    log-normal with median 1000 is capped at 64, every id stays below 50, and
    the server refuses none."""
    report = bench(tool, server, [
        "--model=tiny", "--concurrency=2", "--lengths=lognormal:1000:0.5",
        "--requests=30", "--duration=0", "--warmup=0", "--inputs_per_call=2"])
    assert report["model"] == "tiny", report["model"]
    assert report["config"]["lengths"] == "lognormal:1000:0.5,max=64", report
    assert report["tokens"] == 64 * report["sequences"], report


def check_text_report(tool, server):
    code, out, err = run([tool, "--endpoint=" + server.endpoint, "--requests=5",
                          "--duration=0", "--warmup=0", "--lengths=fixed:8",
                          "--metrics_address=" + server.metrics_address])
    assert code == 0, err
    for needle in ("model small: closed loop, concurrency 1, unary",
                   "calls: 5 (5 ok, 0 failed)", "throughput:", "p99.9",
                   "server: queue"):
        assert needle in out, (needle, out)


def check_server_dies_mid_run(tool, binary, repository, tmp):
    """A run whose server is killed after a second reports what it counted
    and exits 14, not 0, in both modes."""
    for transport in ([], ["--streaming"]):
        server = FavorServer(binary, repository, os.path.join(tmp, "dying.log"))
        bench_process = subprocess.Popen(
            [tool, "--endpoint=" + server.endpoint, "--duration=3s",
             "--warmup=0", "--concurrency=2", "--lengths=fixed:16"] + transport,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        server.process.kill()
        server.process.wait()
        out, err = bench_process.communicate(timeout=60)
        assert bench_process.returncode == 14, (transport, out, err)
        assert "calls found the server unavailable" in err, (transport, err)
        assert "errors UNAVAILABLE" in out, (transport, out)
        calls, failed = map(int, re.search(
            r"calls: (\d+) \(\d+ ok, (\d+) failed\)", out).groups())
        # Closed-loop callers pause (50 ms) after UNAVAILABLE instead of
        # spinning: 2 callers for the 2 s left make at most 80 failed calls.
        # (A bound on all calls would depend on how fast the server was
        # before it died.)
        assert failed < 200, (transport, out)
        print("ok server killed mid-run %s: exit 14, %d calls, %d failed" %
              (transport, calls, failed))


def check_bad_usage(tool, server, tmp):
    endpoint = "--endpoint=" + server.endpoint
    expect_error([tool, endpoint, "--lengths=fixed:0"], 3,
                 "favor-bench: INVALID_ARGUMENT: length distribution 'fixed:0'")
    expect_error([tool, endpoint, "--model=tiny", "--lengths=fixed:65"], 3,
                 "max_tokens_per_input")
    expect_error([tool, endpoint, "--inputs_per_call=0"], 3, "--inputs_per_call=0")
    expect_error([tool, endpoint, "--duration=0", "--requests=0"], 3,
                 "duration or a request count")
    expect_error([tool, endpoint, "--concurrency=0"], 3, "concurrency")
    expect_error([tool, endpoint, "--model=nope"], 5, "nope")
    expect_error([tool, endpoint, "--duration=forever"], 3,
                 "bad value 'forever' for --duration")
    expect_error([tool, endpoint, "extra"], 3, "unexpected argument 'extra'")
    expect_error([tool, endpoint, "--requests=1", "--metrics_address=nohost"], 3,
                 "HOST:PORT")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    expect_error([tool, "--endpoint=127.0.0.1:%d" % closed], 14,
                 "favor-bench: UNAVAILABLE")
    expect_error([tool, endpoint, "--requests=1", "--warmup=0",
                  "--metrics_address=127.0.0.1:%d" % closed], 14,
                 "cannot connect")
    code, out, _ = run([tool, "--help"])
    assert code == 0 and "--request_rate" in out and "--lengths" in out, out


def main():
    tool, binary, favor_model, fixture_dir = sys.argv[1:5]
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, fixture_dir)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    global run, expect_error, bench, check_server_view, FavorServer
    from favor_server_fixture import FavorServer, expect_error, make_models, run
    from bench_checks import bench, check_server_view
    with tempfile.TemporaryDirectory() as tmp:
        repository = os.path.join(tmp, "models")
        make_models(favor_model, repository)
        server = FavorServer(binary, repository, os.path.join(tmp, "server.log"))
        try:
            check_closed_loop(tool, server)
            check_count_bounded_streaming(tool, server)
            check_open_loop(tool, server)
            check_vocabulary_and_limits(tool, server)
            check_text_report(tool, server)
            check_bad_usage(tool, server, tmp)
        except BaseException:
            print(server.log()[-5000:])
            raise
        finally:
            server.stop()
        check_server_dies_mid_run(tool, binary, repository, tmp)
    print("favor-bench end-to-end test: OK")


if __name__ == "__main__":
    main()
