"""A real favor-server for the client tools' end-to-end tests.

Writes small random models with `favor-model init`, starts favor-server on
kernel-chosen ports (--port=0, --metrics_port=0; the ports are read from its
log, so no two tests race for a port), waits for `event=serving`, and stops
it with SIGTERM, expecting exit status 0.
"""
import os
import re
import signal
import subprocess
import time

# name -> favor-model init flags. "small" is the default model (first by
# name); "tiny" has a vocabulary of 50 and accepts at most 64 tokens per
# input, so that the tools' vocabulary and length bounds are exercised.
MODELS = {
    "small": ["--layers", "2", "--hidden", "32", "--heads", "2", "--ffn", "64",
              "--vocab", "100", "--features", "16", "--seed", "5"],
    "tiny": ["--layers", "1", "--hidden", "16", "--heads", "2", "--ffn", "32",
             "--vocab", "50", "--features", "8", "--seed", "6",
             "--max_sequence_length", "64"],
}
HIDDEN = {"small": 32, "tiny": 16}
VOCAB = {"small": 100, "tiny": 50}

# The text tests' models: "text" with a WordPiece vocab.txt of WORD_PIECES
# (written at test time; ids are positions, [CLS] 2 and [SEP] 3), the
# default model (first by name), and "untokenized", token ids only. Both
# have TEXT_HIDDEN wide embeddings and at most TEXT_MAX_TOKENS positions.
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away",
         "and", "then", "slept", ",", "."]
WORD_PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + ["##s"]
TEXT_HIDDEN = 32
TEXT_MAX_TOKENS = 64


def make_models(favor_model, repository):
    for name, flags in MODELS.items():
        subprocess.run([favor_model, "init", "--output",
                        os.path.join(repository, name)] + flags,
                       check=True, stdout=subprocess.DEVNULL)


def make_text_models(favor_model, repository, tmp):
    vocab = os.path.join(tmp, "vocab.txt")
    with open(vocab, "w") as f:
        f.write("\n".join(WORD_PIECES) + "\n")
    shape = ["--layers", "1", "--hidden", str(TEXT_HIDDEN), "--heads", "2",
             "--ffn", "64", "--vocab", "100", "--features", "16",
             "--max_sequence_length", str(TEXT_MAX_TOKENS)]
    for name, flags in (("text", ["--seed", "7", "--tokenizer", vocab]),
                        ("untokenized", ["--seed", "8"])):
        subprocess.run([favor_model, "init", "--output",
                        os.path.join(repository, name)] + flags + shape,
                       check=True, stdout=subprocess.DEVNULL)


class FavorServer:
    def __init__(self, binary, repository, log_path, extra_flags=()):
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                [binary, "--model_repository=" + repository, "--port=0",
                 "--metrics_port=0", "--http_port=0", "--threads=1", "--drain_timeout_seconds=5"]
                + list(extra_flags),
                stdout=log, stderr=subprocess.STDOUT)
        try:
            self.port, self.metrics_port = self._wait_serving()
        except BaseException:
            self.process.kill()
            self.process.wait()
            raise
        self.endpoint = "127.0.0.1:%d" % self.port
        self.metrics_address = "127.0.0.1:%d" % self.metrics_port

    def log(self):
        with open(self.log_path) as log:
            return log.read()

    def _wait_serving(self):
        deadline = time.time() + 120
        while time.time() < deadline:
            text = self.log()
            if "event=serving" in text:
                grpc = re.search(r"event=grpc_started .*port=(\d+)", text)
                metrics = re.search(r"event=metrics_started .*port=(\d+)", text)
                return int(grpc.group(1)), int(metrics.group(1))
            if self.process.poll() is not None:
                raise AssertionError("favor-server exited during start-up:\n" + text)
            time.sleep(0.1)
        raise AssertionError("favor-server never served:\n" + self.log())

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                code = self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                raise AssertionError("favor-server did not stop on SIGTERM")
            assert code == 0, "favor-server exited %d:\n%s" % (code, self.log())


def run(command, stdin=None, timeout=120):
    """Runs a tool; returns (exit code, stdout, stderr)."""
    result = subprocess.run(command, input=stdin, capture_output=True,
                            text=True, timeout=timeout)
    return result.returncode, result.stdout, result.stderr


def expect_error(command, code, needle, stdin=None):
    """The tool exits `code` with one stderr line containing `needle` and
    nothing on stdout."""
    got, out, err = run(command, stdin=stdin)
    where = " ".join(command)
    assert got == code, "%s: exit %d, want %d; stderr: %s" % (where, got, code, err)
    lines = err.splitlines()
    assert len(lines) == 1, "%s: want one stderr line, got %r" % (where, err)
    assert needle in lines[0], "%s: %r lacks %r" % (where, lines[0], needle)
    assert out == "", "%s: printed %r" % (where, out)
    return lines[0]
