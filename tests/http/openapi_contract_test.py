#!/usr/bin/python3
"""favor-server against its own OpenAPI document (GET /openapi.json).

  openapi_contract_test.py FAVOR_SERVER MODEL_REPOSITORY OPENAPI_JSON

Starts favor-server with the default model, a key and a 1 MiB body limit,
and checks that it serves the document the build made (OPENAPI_JSON). Then
it sends, to every route of the document:
- every example the document gives (request bodies, path parameters), with
  the key; each must get its `x-expect-status` (200 when absent);
- probes built from the document for the errors it lists: no key (401, on
  each route that needs one; the others must answer without), the other
  method (405), a Content-Encoding (415), malformed JSON (400), a body over
  the limit (413), a header over the limit (431), a deadline of 1 ms (504
  for an embedding call of 256 inputs; any listed status on the other
  routes, which may answer first), a bad X-Request-Timeout (400), and a
  streaming RPC (501);
and, on a second server without the /docs page and with
--http_info_requires_key, /docs and its files (503) and /info (401);
and checks every answer against the document: its status is listed for
that operation, its Content-Type is one the document gives, a JSON body
validates against the response's schema (JSON Schema 2020-12, Debian's
python3-jsonschema), required headers are there, and every header but
HTTP's own is listed. Prints the coverage:
which (route, method, status) were exercised, out of those listed.
"""
import copy
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import jsonschema

KEY = "contract-test-key"
# HTTP's own headers, which the document need not list; any other header
# of an answer must be listed on its response.
PROTOCOL_HEADERS = {"content-type", "content-length", "connection", "date",
                    "server", "keep-alive", "transfer-encoding", "vary"}
MAX_BODY_BYTES = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(port, method, path, body=None, headers=None):
    """(status, headers, body bytes), errors included."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body, method=method,
        headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()
    except (ConnectionError, urllib.error.URLError) as error:
        return None, {}, str(error).encode()


def raw_exchange(port, request_bytes):
    """One request written as bytes (for what urllib will not send): the
    status, headers and body of the answer, read with http.client."""
    import http.client
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request_bytes)
        answer = http.client.HTTPResponse(s)
        answer.begin()
        return answer.status, answer.headers, answer.read()


class Contract:
    def __init__(self, document):
        self.document = document
        self.resolver = jsonschema.RefResolver.from_schema(document)
        self.exercised = set()
        self.failures = []

    def resolve(self, item):
        while "$ref" in item:
            item = self.resolver.resolve(item["$ref"])[1]
        return item

    def check(self, what, template, method, status, headers, body,
              expected=None):
        """One answer against the document's operation; records it."""
        operation = self.document["paths"][template][method.lower()]
        self.exercised.add((template, method, status))
        problems = []
        if expected is not None and status != expected:
            problems.append(f"status {status}, expected {expected}")
        responses = operation["responses"]
        key = str(status)
        if key not in responses:
            problems.append(f"status {status} is not in the document "
                            f"({sorted(responses)})")
        else:
            problems += self.check_response(self.resolve(responses[key]),
                                            headers, body)
        if problems:
            self.failures.append(f"{what}: {method} {template}: "
                                 + "; ".join(problems)
                                 + f" [body: {body[:300]!r}]")
        else:
            print(f"ok {what}: {method} {template} -> {status}")

    def check_response(self, response, headers, body):
        problems = []
        documented = {name.lower() for name in response.get("headers", {})}
        for name in {name.lower() for name in headers.keys()}:
            if name not in PROTOCOL_HEADERS and name not in documented:
                problems.append(f"header {name} is not in the document")
        for name, header in response.get("headers", {}).items():
            header = self.resolve(header)
            value = headers.get(name)
            if value is None:
                if header.get("required"):
                    problems.append(f"header {name} missing")
                continue
            try:
                jsonschema.Draft202012Validator(
                    header["schema"], resolver=self.resolver).validate(value)
            except jsonschema.ValidationError as error:
                problems.append(f"header {name}: {error.message}")
        content = response.get("content")
        if not content:
            return problems
        media = (headers.get("Content-Type") or "").split(";")[0].strip()
        if media not in content:
            return problems + [f"Content-Type {media!r} is not one of "
                               f"{sorted(content)}"]
        if media == "application/json":
            try:
                value = json.loads(body)
            except ValueError as error:
                return problems + [f"the body is not JSON: {error}"]
            validator = jsonschema.Draft202012Validator(
                content[media]["schema"], resolver=self.resolver)
            errors = sorted(validator.iter_errors(value), key=str)
            problems += [f"schema: {e.message} at "
                         f"/{'/'.join(map(str, e.absolute_path))}"
                         for e in errors[:5]]
        return problems

    def listed(self):
        """Every (route, method, status) the document lists."""
        out = set()
        for template, item in self.document["paths"].items():
            for method, operation in item.items():
                for status in operation["responses"]:
                    out.add((template, method.upper(), int(status)))
        return out


def with_key(headers=None):
    return {"Authorization": f"Bearer {KEY}", **(headers or {})}


def examples_of(item):
    """{name: example} of a parameter or media type."""
    if "examples" in item:
        return item["examples"]
    if "example" in item:
        return {"example": {"value": item["example"]}}
    return {}


def ok_examples(item):
    return [e for e in examples_of(item).values()
            if e.get("x-expect-status", 200) == 200]


def build_request(template, params, values, body):
    """(path, headers) of `template` with `values` by parameter name."""
    path, query, headers = template, [], with_key()
    for param in params:
        if param["name"] not in values:
            continue
        value = str(values[param["name"]])
        if param["in"] == "path":
            path = path.replace("{%s}" % param["name"],
                                urllib.parse.quote(value, safe=""))
        elif param["in"] == "query":
            query.append((param["name"], value))
        elif param["in"] == "header":
            headers[param["name"]] = value
    if query:
        path += "?" + urllib.parse.urlencode(query)
    if body is not None:
        headers["Content-Type"] = "application/json"
    return path, headers


def send_examples(contract, port):
    """Every request the document's examples make: a base request of each
    operation (each parameter and the body at their first example that
    expects 200), then each example of a parameter or of the body in turn
    in its place, expecting its x-expect-status."""
    for template, item in contract.document["paths"].items():
        for method, operation in item.items():
            method = method.upper()
            params = [contract.resolve(p)
                      for p in operation.get("parameters", [])]
            base = {p["name"]: ok_examples(p)[0]["value"]
                    for p in params if ok_examples(p)}
            body_item = operation.get("requestBody", {}).get(
                "content", {}).get("application/json")
            base_body = ok_examples(body_item)[0]["value"] if (
                body_item and ok_examples(body_item)) else None
            variants = []  # (label, values, body, expected status)
            for param in params:
                for name, example in examples_of(param).items():
                    variants.append((f"{param['name']}={name}",
                                     {**base, param["name"]: example["value"]},
                                     base_body,
                                     example.get("x-expect-status", 200)))
            for name, example in (examples_of(body_item).items()
                                  if body_item else []):
                variants.append((f"body {name}", base,
                                 example["value"],
                                 example.get("x-expect-status", 200)))
            if not variants:
                variants.append(("(no example)", base, base_body, 200))
            for label, values, body, expected in variants:
                path, headers = build_request(template, params, values, body)
                data = None if body is None else json.dumps(body).encode()
                status, answer_headers, answer = fetch(port, method, path,
                                                       data, headers)
                contract.check("example " + label, template, method, status,
                               answer_headers, answer, expected)
                if (template == "/v1/embeddings" and status == 200
                        and not body.get("encoding_format")
                        and not body.get("embedding_types")):
                    for datum in json.loads(answer)["data"]:
                        assert isinstance(datum["embedding"], list) and \
                            datum["embedding"], answer


def concrete(template, document):
    """A path of `template` with its first example in each path
    parameter."""
    operation = next(iter(document["paths"][template].values()))
    for param in operation.get("parameters", []):
        if param.get("in") == "path":
            first = ok_examples(param)[0]["value"]
            template = template.replace("{%s}" % param["name"], first)
    return template


def first_body(operation):
    body = operation.get("requestBody", {}).get("content", {}).get(
        "application/json")
    if not body:
        return b"{}"
    ok = [e for e in examples_of(body).values()
          if e.get("x-expect-status", 200) == 200]
    return json.dumps((ok or list(examples_of(body).values()))[0]["value"]).encode()


def heavy_embedding(body, copies=256):
    """An embedding request's body with its first input 256 times; None for
    other bodies."""
    value = json.loads(body) if body else {}
    if isinstance(value.get("input"), str):
        value["input"] = [value["input"]] * copies
    elif value.get("inputs"):
        value["inputs"] = value["inputs"][:1] * copies
    else:
        return None
    return json.dumps(value).encode()


def send_probes(contract, port):
    """The errors the document lists, provoked on every route that lists
    them."""
    document = contract.document
    for template, item in document["paths"].items():
        path = concrete(template, document)
        for method, operation in item.items():
            method = method.upper()
            listed = operation["responses"]
            body = first_body(operation) if method == "POST" else None
            json_headers = {"Content-Type": "application/json"}
            # The key: 401 without it where a key is needed; answered
            # without one where the operation says `security: []`.
            status, headers, answer = fetch(port, method, path, body,
                                            dict(json_headers))
            if operation.get("security") == [] or "401" not in listed:
                contract.check("no key needed", template, method, status,
                               headers, answer)
                assert status not in (401, 403), (template, status)
            else:
                contract.check("no key", template, method, status, headers,
                               answer, 401)
            other = "GET" if method == "POST" else "POST"
            status, headers, answer = fetch(
                port, other, path, b"{}" if other == "POST" else None,
                with_key(json_headers))
            contract.check("wrong method " + other, template, method, status,
                           headers, answer, 405)
            takes_timeout = any(
                contract.resolve(p)["name"] == "X-Request-Timeout"
                for p in operation.get("parameters", []))
            if takes_timeout and "400" in listed:
                status, headers, answer = fetch(
                    port, method, path, body,
                    with_key({**json_headers, "X-Request-Timeout": "soon"}))
                contract.check("bad X-Request-Timeout", template, method,
                               status, headers, answer, 400)
            if takes_timeout and "504" in listed:
                # A deadline of 1 ms. An embedding call of 256 inputs takes
                # longer, so it must be 504; a call answered at once may
                # beat it (200), which the document allows too.
                heavy = heavy_embedding(body)
                status, headers, answer = fetch(
                    port, method, path, heavy or body,
                    with_key({**json_headers, "X-Request-Timeout": "1ms"}))
                contract.check("deadline 1 ms", template, method, status,
                               headers, answer, 504 if heavy else None)
            if method != "POST":
                continue
            if "415" in listed:
                status, headers, answer = fetch(
                    port, method, path, body,
                    with_key({**json_headers, "Content-Encoding": "gzip"}))
                contract.check("Content-Encoding", template, method, status,
                               headers, answer, 415)
            if "400" in listed:
                status, headers, answer = fetch(port, method, path,
                                                b'{"model": ', with_key(json_headers))
                contract.check("malformed JSON", template, method, status,
                               headers, answer, 400)
            if "413" in listed:
                big = b'{"model": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'
                status, headers, answer = fetch(port, method, path, big,
                                                with_key(json_headers))
                contract.check("body over the limit", template, method,
                               status, headers, answer, 413)
            if "431" in listed:
                request = (f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
                           f"X-Padding: {'p' * 20000}\r\n"
                           "Content-Length: 2\r\n\r\n{}").encode()
                status, headers, answer = raw_exchange(port, request)
                contract.check("header over the limit", template, method,
                               status, headers, answer, 431)


def coverage(contract):
    listed = contract.listed()
    hit = contract.exercised & listed
    print(f"coverage: {len(hit)} of {len(listed)} (route, method, status) "
          "the document lists were exercised")
    by_route = {}
    for template, method, status in sorted(listed):
        mark = "" if (template, method, status) in hit else "-"
        by_route.setdefault(f"{method} {template}", []).append(f"{mark}{status}")
    for route, statuses in by_route.items():
        print(f"  {route}: {' '.join(statuses)}")
    print("  (-: listed, not exercised)")


def wait_healthy(port, server):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"favor-server exited with {server.returncode}")
        status, _, _ = fetch(port, "GET", "/health")
        if status == 200:
            return
        time.sleep(0.2)
    sys.exit("favor-server did not become healthy in 120 s")


def run_server(binary, repository, work, flags, check):
    """favor-server with the default model, a key and `flags`, while
    check(port) runs."""
    tokens = os.path.join(work, "tokens")
    with open(tokens, "w") as f:
        f.write(KEY + "\n")
    port = free_port()
    log = open(os.path.join(work, "server.log"), "w+")
    server = subprocess.Popen(
        [binary, f"--model_repository={repository}", f"--port={free_port()}",
         "--metrics_port=0", f"--http_port={port}",
         f"--auth_tokens_file={tokens}"] + flags, stderr=log)
    try:
        wait_healthy(port, server)
        check(port)
        status, _, _ = fetch(port, "GET", "/health")
        assert status == 200, "the server stopped serving"
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.seek(0)
        if sys.exc_info()[0] is not None:
            print(log.read()[-4000:])


def main():
    binary, repository, document_path = sys.argv[1:4]
    with open(document_path, "rb") as f:
        built = f.read()
    document = json.loads(built)
    jsonschema.Draft202012Validator.check_schema(
        {"$defs": document["components"]["schemas"]})
    contract = Contract(document)

    def everything(port):
        status, _, served = fetch(port, "GET", "/openapi.json")
        assert status == 200 and served == built, \
            "GET /openapi.json is not the document the build made"
        send_examples(contract, port)
        send_probes(contract, port)

    def without_page(port):
        # A server whose page was not installed (npm unreachable at build
        # time): /docs and its files are 503, the document still served.
        for template, path in (("/docs", "/docs"),
                               ("/docs/{file}", concrete("/docs/{file}", document))):
            status, headers, answer = fetch(port, "GET", path)
            contract.check("no page", template, "GET", status, headers,
                           answer, 503)
        status, _, served = fetch(port, "GET", "/openapi.json")
        assert status == 200 and served == built, "no document without a page"
        # With --http_info_requires_key, /info as the other routes.
        status, headers, answer = fetch(port, "GET", "/info")
        contract.check("key required", "/info", "GET", status, headers,
                       answer, 401)
        status, headers, answer = fetch(port, "GET", "/info", None, with_key())
        contract.check("key required, given", "/info", "GET", status,
                       headers, answer, 200)

    with tempfile.TemporaryDirectory() as work:
        run_server(binary, repository, work,
                   [f"--http_max_body_bytes={MAX_BODY_BYTES}"], everything)
        run_server(binary, repository, work,
                   [f"--docs_dir={os.path.join(work, 'no-page')}",
                    "--http_info_requires_key"], without_page)
    coverage(contract)
    if contract.failures:
        print(f"FAILED: {len(contract.failures)} answers disagree with the "
              "document:")
        for failure in contract.failures:
            print("  " + failure)
        sys.exit(1)
    print("ok: every answer agrees with the document")


if __name__ == "__main__":
    main()
