#!/usr/bin/python3
"""A real browser calls favor-server's HTTP API from another origin (CORS).

  cors_browser_test.py FAVOR_SERVER MODEL_REPOSITORY

Headless Chromium (Debian's `chromium`) loads a page from two origins, each a
local HTTP server on its own port, while favor-server runs with
--http_cors_allow_origins naming only the first and a bearer key. On each
page, fetch() POSTs JSON with an Authorization header to /v1/embeddings
(which makes the browser send a preflight first), and then a call with a
wrong key. The page writes what it could read into the DOM, which Chromium
prints (--dump-dom). Expected:
- the listed origin reads the embedding, equal to what urllib (no browser,
  no CORS) gets for the same text, an exposed header (x-compute-tokens,
  equal to the body's usage) and the 401's JSON error;
- the unlisted origin reads nothing: the browser blocks both calls.
Exit status 77 (skipped) when chromium is not installed
(scripts/install-deps.sh installs it).
"""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

KEY = "browser-test-key"

PAGE = """<!doctype html><html><body><pre id="out">pending</pre><script>
const api = "http://127.0.0.1:%(port)d/v1/embeddings";
async function call(key) {
  try {
    const r = await fetch(api, {
      method: "POST",
      headers: {"Content-Type": "application/json",
                "Authorization": "Bearer " + key,
                "X-Request-Id": "browser-page-1"},
      body: JSON.stringify({model: "default", input: ["a page calls favor"]})});
    const body = await r.json();
    return {status: r.status, body: body, retry: r.headers.get("Retry-After"),
            tokens: r.headers.get("x-compute-tokens"),
            request_id: r.headers.get("X-Request-Id")};
  } catch (e) {
    return {blocked: String(e)};
  }
}
(async () => {
  const good = await call("%(key)s");
  const bad = await call("wrong-key");
  document.getElementById("out").textContent =
      "RESULT " + JSON.stringify({good: good, bad: bad}) + " END";
})();
</script></body></html>"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *unused):
        pass


def serve_page(directory):
    """An HTTP server of `directory` on a free port, in a thread."""
    handler = lambda *a: QuietHandler(*a, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_server(binary, repository, origin, work):
    tokens = os.path.join(work, "tokens")
    with open(tokens, "w") as f:
        f.write(KEY + "\n")
    log = open(os.path.join(work, "server.log"), "w+")
    with socket.socket() as s:  # --http_port=0 turns the API off
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [binary, f"--model_repository={repository}", "--port=0",
         "--metrics_port=0", f"--http_port={port}",
         f"--auth_tokens_file={tokens}",
         f"--http_cors_allow_origins={origin}"],
        stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 120
    while time.time() < deadline:
        log.seek(0)
        if "event=http_started" in log.read():
            return process, port
        if process.poll() is not None:
            log.seek(0)
            sys.exit("favor-server exited:\n" + log.read())
        time.sleep(0.2)
    process.kill()
    sys.exit("favor-server did not start the HTTP API")


def embed_without_browser(port, text):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/embeddings",
        json.dumps({"model": "default", "input": [text]}).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    deadline = time.time() + 120
    while True:  # 503 until the models have warmed up
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return json.load(answer)["data"][0]["embedding"]
        except urllib.error.HTTPError as error:
            if error.code != 503 or time.time() > deadline:
                raise
            time.sleep(0.2)


def browse(chromium, url, work):
    """What the page at `url` wrote, as a dict."""
    run = subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
         "--no-first-run", f"--user-data-dir={work}/chromium-profile",
         "--virtual-time-budget=30000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    found = re.search(r"RESULT (.*) END", run.stdout)
    if not found:
        sys.exit(f"the page at {url} wrote no result:\n{run.stdout}\n"
                 f"{run.stderr[-2000:]}")
    return json.loads(found.group(1).replace("&quot;", '"').replace(
        "&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def main():
    binary, repository = sys.argv[1:3]
    chromium = shutil.which("chromium")
    if chromium is None:
        print("SKIP: chromium is not installed (scripts/install-deps.sh)")
        return 77
    work = tempfile.mkdtemp(prefix="favor_cors_")
    process = None
    try:
        listed, unlisted = serve_page(work), serve_page(work)
        listed_origin = f"http://127.0.0.1:{listed.server_address[1]}"
        process, port = start_server(binary, repository, listed_origin, work)
        with open(os.path.join(work, "page.html"), "w") as f:
            f.write(PAGE % {"port": port, "key": KEY})
        direct = embed_without_browser(port, "a page calls favor")

        got = browse(chromium, f"{listed_origin}/page.html", work)
        good, bad = got["good"], got["bad"]
        assert "blocked" not in good, good
        assert good["status"] == 200, good
        vector = good["body"]["data"][0]["embedding"]
        assert len(vector) == len(direct), (len(vector), len(direct))
        worst = max(abs(a - b) for a, b in zip(vector, direct))
        assert worst <= 1e-6, worst
        assert good["retry"] is None, good
        # An exposed header: readable by the page, and right.
        usage = good["body"]["usage"]["prompt_tokens"]
        assert good["tokens"] == str(usage), (good["tokens"], usage)
        # The page's own X-Request-Id (a preflighted header), echoed and
        # exposed.
        assert good["request_id"] == "browser-page-1", good
        assert bad.get("status") == 401, bad
        assert bad["body"]["error"]["code"] == "invalid_api_key", bad
        print(f"ok listed origin {listed_origin}: the embedding "
              f"({len(vector)} values, equal to urllib's within {worst:.1e}), "
              f"x-compute-tokens {good['tokens']} and the 401's error read "
              "by the page")

        unlisted_origin = f"http://127.0.0.1:{unlisted.server_address[1]}"
        got = browse(chromium, f"{unlisted_origin}/page.html", work)
        assert "blocked" in got["good"] and "blocked" in got["bad"], got
        print(f"ok unlisted origin {unlisted_origin}: the browser blocked "
              f"both calls ({got['good']['blocked']})")
        return 0
    finally:
        if process is not None:
            process.terminate()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
