"""favor-server on a repository of one model, for the tools that compare
what it serves (bench/retrieval_bench.py, tests/model/default_model_test.py):
texts in through POST /v1/embeddings, float64 vectors out."""

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import torch


class Server:
    """favor-server serving a copy of `model_dir` as `default`; a context
    manager that stops it and removes the copy."""

    def __init__(self, binary, model_dir, startup_seconds=120, flags=()):
        self.repository = tempfile.mkdtemp(prefix="favor_served_")
        shutil.copytree(model_dir, f"{self.repository}/default")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.startup_seconds = startup_seconds
        self.process = subprocess.Popen(
            [binary, "--model_repository", self.repository, "--port", "0",
             "--metrics_port", "0", "--http_port", str(self.port),
             "--bind_address", "127.0.0.1", *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def __enter__(self):
        return self

    def __exit__(self, *unused):
        self.close()

    def embed(self, texts, max_chars=65536, max_inputs=64):
        """(len(texts), dim) float64, in calls of at most max_inputs texts
        and about max_chars characters."""
        vectors, batch, chars = [], [], 0
        for text in texts:
            if batch and (chars + len(text) > max_chars or len(batch) == max_inputs):
                vectors += self._post(batch)
                batch, chars = [], 0
            batch.append(text)
            chars += len(text)
        if batch:
            vectors += self._post(batch)
        return torch.tensor(vectors, dtype=torch.float64)

    def _post(self, texts):
        body = json.dumps({"model": "default", "input": texts}).encode()
        deadline = time.time() + self.startup_seconds
        while True:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{self.port}/v1/embeddings", body,
                    {"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=600) as answer:
                    return [d["embedding"] for d in json.load(answer)["data"]]
            except urllib.error.HTTPError as error:
                # The server answered: a refusal is final (only "not ready
                # yet", 503, is worth asking again).
                if error.code != 503 or time.time() > deadline:
                    raise RuntimeError(f"favor-server answered {error.code}: "
                                       f"{error.read().decode(errors='replace')}")
                time.sleep(0.2)
            except (ConnectionError, urllib.error.URLError):
                if self.process.poll() is not None:
                    raise RuntimeError("favor-server exited: " + self.process.stderr.read())
                if time.time() > deadline:
                    raise RuntimeError("favor-server did not answer in time")
                time.sleep(0.2)

    def close(self):
        self.process.terminate()
        self.process.wait()
        shutil.rmtree(self.repository, ignore_errors=True)
