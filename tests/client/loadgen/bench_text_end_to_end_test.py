#!/usr/bin/python3
"""favor-bench with text (--corpus) against a real favor-server.

The models of the text tests (favor_server_fixture.make_text_models: "text"
with a WordPiece vocabulary written at test time, "untokenized" without a
tokenizer) and a corpus of whole words of that vocabulary, so that the
model's tokenizer counts exactly one token per word and a cut of N tokens
is N tokens on the server. Checks: closed loop unary and streaming runs
send texts of the drawn lengths (the report's and the server's token counts
agree), the server's tokenisation time shows in the report (one per call),
and bad corpora fail before the run with the gRPC code as exit status.

Usage: bench_text_end_to_end_test.py FAVOR_BENCH FAVOR_SERVER FAVOR_MODEL
                                     FIXTURE_DIR
"""
import os
import random
import sys
import tempfile


def write_corpus(path, words, documents=40):
    generator = random.Random(5)
    with open(path, "w") as f:
        f.write("\n")  # blank lines are not documents
        for _ in range(documents):
            count = generator.randint(3, 30)
            f.write(" ".join(generator.choice(words) for _ in range(count)))
            f.write("\n")


def check_fixed_lengths(tool, server, corpus):
    for transport in ([], ["--streaming", "--concurrency=3"]):
        report = bench(tool, server, [
            "--corpus=" + corpus, "--lengths=fixed:16", "--requests=20",
            "--duration=0", "--warmup=0", "--inputs_per_call=2",
            "--metrics_address=" + server.metrics_address] + transport)
        config = report["config"]
        assert config["inputs"] == "text", config
        assert config["corpus_documents"] == 40, config
        assert report["sequences"] == 40, report
        assert report["tokens"] == 16 * 40, report  # [CLS] 14 words [SEP]
        check_server_view(report)
        server_view = report["server"]
        assert server_view["tokenizations"] == 20, server_view
        assert server_view["tokenization_seconds_total"] > 0, server_view
        assert 0 < server_view["tokenization_share"] < 1, server_view


def check_drawn_lengths(tool, server, corpus):
    report = bench(tool, server, [
        "--corpus=" + corpus, "--lengths=uniform:3:64", "--duration=1s",
        "--warmup=100ms", "--concurrency=2", "--seed=9"])
    assert 3 * report["sequences"] <= report["tokens"] <= 64 * report["sequences"]
    # Long draws are capped at the model's 64 positions, not refused.
    capped = bench(tool, server, [
        "--corpus=" + corpus, "--lengths=lognormal:500:0.3", "--requests=5",
        "--duration=0", "--warmup=0"])
    assert capped["tokens"] == 64 * capped["sequences"], capped


def check_text_report(tool, server, corpus):
    code, out, err = run([tool, "--endpoint=" + server.endpoint,
                          "--corpus=" + corpus, "--requests=5", "--duration=0",
                          "--warmup=0", "--lengths=fixed:8",
                          "--metrics_address=" + server.metrics_address])
    assert code == 0, err
    for needle in ("1 text input(s) per call", "calls: 5 (5 ok, 0 failed)",
                   "server tokenisation:"):
        assert needle in out, (needle, out)


def check_bad_corpus(tool, server, tmp):
    endpoint = "--endpoint=" + server.endpoint
    lengths = "--lengths=fixed:16"
    expect_error([tool, endpoint, lengths, "--corpus=" + tmp + "/absent"], 5,
                 "absent")
    blank = os.path.join(tmp, "blank.txt")
    with open(blank, "w") as f:
        f.write("\n  \n")
    expect_error([tool, endpoint, lengths, "--corpus=" + blank], 3, "no token")
    expect_error([tool, endpoint, lengths, "--model=untokenized",
                  "--corpus=" + os.path.join(tmp, "corpus.txt")], 9,
                 "--corpus")


def main():
    tool, binary, favor_model, fixture_dir = sys.argv[1:5]
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, fixture_dir)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    global run, expect_error, bench, check_server_view
    from favor_server_fixture import (WORDS, FavorServer, expect_error,
                                      make_text_models, run)
    from bench_checks import bench, check_server_view
    with tempfile.TemporaryDirectory() as tmp:
        repository = os.path.join(tmp, "models")
        make_text_models(favor_model, repository, tmp)
        corpus = os.path.join(tmp, "corpus.txt")
        write_corpus(corpus, WORDS)
        server = FavorServer(binary, repository, os.path.join(tmp, "server.log"))
        try:
            check_fixed_lengths(tool, server, corpus)
            check_drawn_lengths(tool, server, corpus)
            check_text_report(tool, server, corpus)
            check_bad_corpus(tool, server, tmp)
        except BaseException:
            print(server.log()[-5000:])
            raise
        finally:
            server.stop()
    print("favor-bench text end-to-end test: OK")


if __name__ == "__main__":
    main()
