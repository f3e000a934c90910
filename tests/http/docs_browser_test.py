#!/usr/bin/python3
"""favor-server's /docs page in a real browser.

  docs_browser_test.py FAVOR_SERVER MODEL_REPOSITORY NODE_MODULES SCREENSHOT

Starts favor-server with the default model (and the page the build
installed beside it), then headless Chromium (Debian's `chromium`, driven by
npm's playwright-core: docs_browser.mjs) loads /docs, finds POST
/v1/embeddings, presses "Try it out" and "Execute", and reads the answer
the page shows. Expected: 200, and a body with one embedding of the default
model's width, equal to what urllib gets for the same example. The
screenshot is kept at SCREENSHOT (docs/testing.md says where).

Fails, never skips, when chromium, the page or the npm packages are
missing: the page is part of the server's build (favor_docs_page) and
chromium is installed by scripts/install-deps.sh.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, body=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body,
        headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (ConnectionError, urllib.error.URLError):
        return None, b""


def main():
    binary, repository, node_modules, screenshot = sys.argv[1:5]
    if shutil.which("chromium") is None:
        sys.exit("FAILED: chromium is not installed (scripts/install-deps.sh "
                 "installs it)")
    os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
    if os.path.exists(screenshot):
        os.remove(screenshot)
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        log = open(os.path.join(work, "server.log"), "w+")
        server = subprocess.Popen(
            [binary, f"--model_repository={repository}",
             f"--port={free_port()}", "--metrics_port=0",
             f"--http_port={port}"], stderr=log)
        try:
            deadline = time.monotonic() + 120
            while get(port, "/health")[0] != 200:
                assert server.poll() is None, "favor-server exited"
                assert time.monotonic() < deadline, "not healthy in 120 s"
                time.sleep(0.2)
            status, page = get(port, "/docs")
            assert status == 200, ("GET /docs: the page is missing; build "
                                   f"target favor_docs_page: {page[:300]!r}")
            run = subprocess.run(
                ["node", os.path.join(HERE, "docs_browser.mjs"), node_modules,
                 f"http://127.0.0.1:{port}", screenshot],
                capture_output=True, text=True, timeout=180)
            if run.returncode != 0:
                sys.exit(f"FAILED: the browser run failed:\n{run.stderr[-4000:]}")
            seen = json.loads(run.stdout.strip().splitlines()[-1])
            document = json.loads(get(port, "/openapi.json")[1])
            example = next(iter(document["paths"]["/v1/embeddings"]["post"]
                                ["requestBody"]["content"]["application/json"]
                                ["examples"].values()))["value"]
            _, direct = get(port, "/v1/embeddings",
                            json.dumps(example).encode())
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.seek(0)
            if sys.exc_info()[0] is not None:
                print(log.read()[-4000:])
    assert not seen["failed"], seen["failed"]
    assert seen["status"] == "200", f"the page shows status {seen['status']}"
    shown = json.loads(seen["body"])
    want = json.loads(direct)
    assert len(shown["data"]) == len(want["data"]) == 1, shown
    got_vector = shown["data"][0]["embedding"]
    want_vector = want["data"][0]["embedding"]
    assert len(got_vector) == len(want_vector) > 0, len(got_vector)
    error = max(abs(a - b) for a, b in zip(got_vector, want_vector))
    assert error < 1e-6, f"the page's embedding differs from urllib's by {error}"
    assert os.path.getsize(screenshot) > 10000, "the screenshot is empty"
    print(f"ok: /docs in Chromium: {seen['operations']} operations drawn; "
          f"POST /v1/embeddings, Try it out, Execute: 200 with a "
          f"{len(got_vector)}-value embedding equal to urllib's "
          f"(max difference {error:.1e}); screenshot {screenshot}")


if __name__ == "__main__":
    main()
