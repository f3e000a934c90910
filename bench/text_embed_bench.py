#!/usr/bin/python3
"""Tokenisation's share of Embed's server-side time, for text inputs.

Starts favor-server on a model repository (by default the build's, whose
default model has BERT-base-uncased's tokenizer), then for each length sends
text Embed calls one at a time and reads, from /metrics before and after,
the sums of favor_tokenization_duration_seconds (the tokenizer threads'
work for the call) and favor_compute_duration_seconds (the batches that
computed it; one call at a time is one batch), and of
favor_request_duration_seconds (the whole call on the server). The text is
English prose (a file Debian installs, GPL-3 by default) cut to exactly the
number of tokens asked, special tokens included.

Usage: bench/text_embed_bench.py [--server build/server/favor-server]
  [--models build/models] [--prose /usr/share/common-licenses/GPL-3]
  [--lengths 512:20,4096:5,32768:2,131072:1]   (tokens:calls)
Needs Debian's python3-grpcio and python3-protobuf; the stubs are generated
at run time from proto/ as tests/service/python_peer_test.py does.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "service"))
import python_peer_test as peer  # noqa: E402

FAMILIES = ("favor_tokenization_duration_seconds",
            "favor_compute_duration_seconds")


def sums(metrics_port):
    body = urllib.request.urlopen(
        "http://127.0.0.1:%d/metrics" % metrics_port, timeout=10).read().decode()
    out = {}
    for family in FAMILIES:
        match = re.search(r'^%s_sum\{model="default"\} (\S+)' % family, body, re.M)
        out[family] = float(match.group(1)) if match else 0.0
    match = re.search(r'^favor_request_duration_seconds_sum\{code="OK",'
                      r'method="Embed",model="default"\} (\S+)', body, re.M)
    out["request"] = float(match.group(1)) if match else 0.0
    return out


def text_of(stub, pb, prose, tokens):
    """A prefix of `prose` (repeated as needed) of exactly `tokens` tokens."""
    text = prose
    while True:
        got = stub.Tokenize(pb.TokenizeRequest(texts=[text]), timeout=600).texts[0]
        if len(got.ids) >= tokens:
            break
        text = text + "\n" + prose
    # The last content token kept is tokens - 2 ([CLS] first, [SEP] last).
    end = got.end_offsets[tokens - 2]
    return text.encode("utf-8")[:end].decode("utf-8")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default=os.path.join(ROOT, "build/server/favor-server"))
    parser.add_argument("--models", default=os.path.join(ROOT, "build/models"))
    parser.add_argument("--prose", default="/usr/share/common-licenses/GPL-3")
    parser.add_argument("--lengths", default="512:20,4096:5,32768:2,131072:1")
    args = parser.parse_args()
    import grpc
    prose = open(args.prose, encoding="utf-8").read()
    with tempfile.TemporaryDirectory() as out:
        peer.generate_stubs(os.path.join(ROOT, "proto"), out)
        from favor.v1 import favor_pb2 as pb, favor_pb2_grpc as rpc
        import health_pb2, health_pb2_grpc
        port, metrics_port = peer.free_port(), peer.free_port()
        server = subprocess.Popen(
            [args.server, "--model_repository=" + args.models,
             "--port=%d" % port, "--metrics_port=%d" % metrics_port,
             "--http_port=0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            channel = grpc.insecure_channel(
                "127.0.0.1:%d" % port,
                options=[("grpc.max_send_message_length", 64 << 20),
                         ("grpc.max_receive_message_length", 64 << 20)])
            peer.wait_serving(grpc, health_pb2, health_pb2_grpc, channel, server)
            stub = rpc.FavorStub(channel)
            print("| tokens | calls | bytes of text | tokenisation ms per call "
                  "| compute ms per call | request ms per call "
                  "| tokenisation / compute | tokenisation / request |")
            print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for item in args.lengths.split(","):
                tokens, calls = (int(x) for x in item.split(":"))
                text = text_of(stub, pb, prose, tokens)
                request = pb.EmbedRequest(inputs=[pb.EmbedInput(text=text)])
                stub.Embed(request, timeout=3600)  # warm-up, not counted
                before = sums(metrics_port)
                for _ in range(calls):
                    answer = stub.Embed(request, timeout=3600)
                    assert answer.num_tokens == tokens, answer.num_tokens
                after = sums(metrics_port)
                tok, comp = (after[f] - before[f] for f in FAMILIES)
                req = after["request"] - before["request"]
                print("| %d | %d | %d | %.2f | %.1f | %.1f | %.2f%% | %.2f%% |" % (
                    tokens, calls, len(text.encode("utf-8")), 1e3 * tok / calls,
                    1e3 * comp / calls, 1e3 * req / calls, 100 * tok / comp,
                    100 * tok / req))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
