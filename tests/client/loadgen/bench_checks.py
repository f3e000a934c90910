"""What every favor-bench end-to-end test checks of a --json report.

The caller puts tests/client/cli (favor_server_fixture) on sys.path before
importing this module.
"""
import json

from favor_server_fixture import run


def bench(tool, server, args):
    command = [tool, "--endpoint=" + server.endpoint, "--json"] + args
    code, out, err = run(command, timeout=120)
    assert code == 0, "%s: exit %d: %s" % (" ".join(command), code, err)
    report = json.loads(out)
    check_report(report, args)
    return report


def check_report(report, args):
    requests = report["requests"]
    assert requests["errors"] == {}, (args, requests)
    assert requests["ok"] > 0, (args, report)
    assert requests["total"] == requests["ok"] + sum(requests["errors"].values())
    inputs_per_call = report["config"]["inputs_per_call"]
    assert report["sequences"] == requests["ok"] * inputs_per_call, report
    latency = report["latency_ms"]
    assert latency["count"] == requests["ok"], (latency, requests)
    order = [latency[k] for k in ("min", "p50", "p90", "p99", "p99_9", "max")]
    assert order == sorted(order) and order[0] > 0, (args, latency)
    assert latency["min"] <= latency["mean"] <= latency["max"], latency
    seconds = report["measured_seconds"]
    assert seconds > 0, report
    throughput = report["throughput"]
    for key, count in (("requests_per_second", requests["ok"]),
                       ("sequences_per_second", report["sequences"]),
                       ("tokens_per_second", report["tokens"])):
        assert abs(throughput[key] * seconds - count) < 1e-6 * count + 1e-6, (
            key, throughput, seconds, count)


def check_server_view(report):
    """The server counted what the client sent, and nothing else ran."""
    server = report["server"]
    assert server["queued_inputs"] == report["sequences"], (server, report)
    assert server["tokens_processed"] == report["tokens"], (server, report)
    assert server["requests"] == report["requests"]["ok"], (server, report)
    assert server["batches"] >= 1 and server["compute_ms_mean"] > 0, server
    assert server["queue_ms_mean"] >= 0, server
    assert 1 <= server["batch_size_mean"] <= report["sequences"], server
    # Time on the server never exceeds the time the client waited.
    mean_latency = report["latency_ms"]["mean"]
    assert server["request_ms_mean"] <= mean_latency + 1e-3, (server, mean_latency)
