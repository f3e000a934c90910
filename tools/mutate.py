#!/usr/bin/env python3
"""Favor's mutation campaign (docs/testing.md says more).

Plants the bugs of tools/mutants.py one at a time, rebuilds only the binaries
that the chosen tests run, runs those tests, and puts the file back: always
(try/finally, SIGTERM and SIGINT included), and after a hard kill at the next
start, from the copy kept in <build>/mutate-state.json. Writes a Markdown
table: which mutants the suite caught, which survived, which did not build.

  tools/mutate.py --check            every snippet occurs exactly once
  tools/mutate.py --list             the catalogue
  tools/mutate.py [--only ID,...]    the campaign (the tree must be built)

Python 3 standard library only.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutants import KINDS, MUTANTS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE_FILE = "mutate-state.json"


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def write(path, text):
    with open(os.path.join(ROOT, path), "w", encoding="utf-8") as f:
        f.write(text)


def check_catalogue(mutants):
    """Problems with the catalogue: unknown kinds, duplicate ids, snippets
    that do not occur exactly once (or a replacement equal to them)."""
    problems, seen = [], set()
    for m in mutants:
        if m["id"] in seen:
            problems.append(f"{m['id']}: duplicate id")
        seen.add(m["id"])
        if m["kind"] not in KINDS:
            problems.append(f"{m['id']}: unknown kind {m['kind']!r}")
        if m["original"] == m["replacement"]:
            problems.append(f"{m['id']}: replacement equals the original")
        try:
            count = read(m["file"]).count(m["original"])
        except OSError as e:
            problems.append(f"{m['id']}: {e}")
            continue
        if count != 1:
            problems.append(
                f"{m['id']}: the original occurs {count} times in {m['file']}")
    return problems


def recover(build_dir):
    """Puts back a file left mutated by a run that was killed."""
    path = os.path.join(build_dir, STATE_FILE)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        state = json.load(f)
    write(state["file"], state["text"])
    os.remove(path)
    print(f"restored {state['file']} (a previous run left {state['id']} "
          "planted)", file=sys.stderr)


def dirty_files(files):
    out = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--"]
                         + sorted(files), capture_output=True, text=True,
                         check=True).stdout
    return [line[3:] for line in out.splitlines()]


def run(cmd, timeout, log=None):
    """(exit code or "timeout", output); the whole process group is killed
    on timeout, so no test server outlives its mutant."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except (subprocess.TimeoutExpired, Interrupted) as e:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        if isinstance(e, Interrupted):
            raise
        code = "timeout"
    if log is not None:
        log.write(f"$ {' '.join(cmd)}\n{out}\n")
        log.flush()
    return code, out


def ctest_filter(m):
    args = ["-L", m["labels"]]
    if m["exclude"]:
        args += ["-E", m["exclude"]]
    if m["regex"]:
        args += ["-R", m["regex"]]
    return args


def selected_tests(args, m, known_outputs):
    """The tests a mutant's filter selects, and the ninja outputs (binaries,
    generated models) that they run or need."""
    code, out = run(["ctest", "--test-dir", args.build_dir,
                     "--show-only=json-v1"] + ctest_filter(m), 120)
    if code != 0:
        raise RuntimeError(f"ctest --show-only failed:\n{out}")
    tests = json.loads(out).get("tests", [])
    build = os.path.realpath(args.build_dir)
    outputs = set()
    for test in tests:
        paths = list(test.get("command", []))
        for prop in test.get("properties", []):
            if prop["name"] == "REQUIRED_FILES":
                paths += prop["value"]
        for path in paths:
            rel = os.path.relpath(os.path.realpath(path), build)
            if rel in known_outputs:
                outputs.add(rel)
    return [t["name"] for t in tests], sorted(outputs)


def ninja_outputs(build_dir):
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "targets", "all"],
                         capture_output=True, text=True, check=True).stdout
    return {line.rsplit(":", 1)[0] for line in out.splitlines()}


def build(args, outputs, log):
    return run(["cmake", "--build", args.build_dir, "-j", str(args.jobs),
                "--target"] + outputs, args.build_timeout, log)


def failed_tests(out):
    """The names ctest lists as failed (its summary, or a timed-out one)."""
    # A parameterised GoogleTest case carries "# GetParam() = ..." after its
    # name; the reason is the last parenthesised words ("Subprocess aborted").
    found = re.findall(r"^\s*\d+ - (\S+).*? \(([^()\n]+)\)$", out,
                       re.MULTILINE)
    if not found:
        found = re.findall(r"Test\s+#\d+: (\S+) \.+\*+(Failed|Timeout)", out)
    # A timeout may be a hang the mutant did not cause: say so in the table.
    return [name if why == "Failed" else f"{name} ({why.lower()})"
            for name, why in found]


def run_mutant(args, m, known_outputs, log):
    tests, outputs = selected_tests(args, m, known_outputs)
    result = dict(id=m["id"], file=m["file"], kind=m["kind"], tests=len(tests))
    if not tests:
        result.update(outcome="no tests", detail=f"-L {m['labels']} selects "
                      "nothing: build the tree first (make build)")
        return result
    start = time.monotonic()
    original = read(m["file"])
    state_path = os.path.join(args.build_dir, STATE_FILE)
    with open(state_path, "w", encoding="utf-8") as f:
        json.dump({"id": m["id"], "file": m["file"], "text": original}, f)
    try:
        write(m["file"], original.replace(m["original"], m["replacement"], 1))
        code, out = build(args, outputs, log)
        if code != 0:
            result.update(outcome="not viable", detail="does not build")
        else:
            code, out = run(
                ["ctest", "--test-dir", args.build_dir, "-j", str(args.jobs),
                 "--stop-on-failure", "--timeout", str(args.test_timeout)]
                + ctest_filter(m), args.timeout, log)
            if code == "timeout":
                result.update(outcome="caught", detail="timed out")
            elif code != 0:
                names = failed_tests(out)
                result.update(outcome="caught",
                              detail=", ".join(names[:3]) or "ctest failed")
            elif m["equivalent"]:
                result.update(outcome="equivalent", detail=m["equivalent"])
            else:
                result.update(outcome="survived", detail="")
    finally:
        write(m["file"], original)
        os.remove(state_path)
    result["seconds"] = round(time.monotonic() - start)
    return result


def table(results, sample):
    caught = sum(r["outcome"] == "caught" for r in results)
    equivalent = sum(r["outcome"] == "equivalent" for r in results)
    viable = sum(r["outcome"] in ("caught", "survived", "equivalent")
                 for r in results)
    counted = viable - equivalent
    lines = []
    if sample:
        lines.append("A sample of the catalogue (--only), not the campaign.")
        lines.append("")
    lines += ["| mutant | file | kind | result | caught by / why | s |",
              "| --- | --- | --- | --- | --- | ---: |"]
    for r in results:
        lines.append(f"| `{r['id']}` | `{r['file']}` | {r['kind']} | "
                     f"{r['outcome']} | {r.get('detail', '')} | "
                     f"{r.get('seconds', '')} |")
    lines.append("")
    share = f"{100.0 * caught / counted:.0f}%" if counted else "n/a"
    lines.append(f"Caught {caught} of {counted} viable mutants ({share}); "
                 f"{equivalent} equivalent; "
                 f"{len(results) - viable} not viable or without tests.")
    return "\n".join(lines) + "\n"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="comma-separated mutant ids")
    p.add_argument("--list", action="store_true", help="print the catalogue")
    p.add_argument("--check", action="store_true",
                   help="check the catalogue against the sources; no build")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--output", help="write the Markdown table here too")
    p.add_argument("--timeout", type=int, default=1800,
                   help="seconds for one mutant's tests (default 1800)")
    p.add_argument("--test-timeout", type=int, default=600,
                   help="seconds for one test (ctest --timeout)")
    p.add_argument("--build-timeout", type=int, default=3600)
    return p.parse_args()


def choose(only):
    if not only:
        return MUTANTS
    wanted = only.split(",")
    by_id = {m["id"]: m for m in MUTANTS}
    unknown = [i for i in wanted if i not in by_id]
    if unknown:
        sys.exit(f"unknown mutant ids: {', '.join(unknown)}")
    return [by_id[i] for i in wanted]


def main():
    args = parse_args()
    args.build_dir = os.path.abspath(args.build_dir)
    mutants = choose(args.only)
    if args.list:
        for m in mutants:
            print(f"{m['id']:40} {m['kind']:20} {m['file']}  [-L {m['labels']}]")
        return 0
    if args.check:
        recover(args.build_dir)
        problems = check_catalogue(MUTANTS)
        print("\n".join(problems) or f"{len(MUTANTS)} mutants: every snippet "
              "occurs exactly once")
        return 1 if problems else 0
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    recover(args.build_dir)
    dirty = dirty_files({m["file"] for m in MUTANTS})
    if dirty:
        sys.exit("refusing to run: uncommitted changes in catalogue files "
                 f"({', '.join(dirty)}); commit or stash them first")
    problems = check_catalogue(mutants)
    if problems:
        sys.exit("\n".join(problems))
    known_outputs = ninja_outputs(args.build_dir)
    results = []
    log_path = os.path.join(args.build_dir, "mutate.log")
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            for m in mutants:
                print(f"[{len(results) + 1}/{len(mutants)}] {m['id']} ...",
                      end=" ", flush=True)
                results.append(run_mutant(args, m, known_outputs, log))
                r = results[-1]
                print(f"{r['outcome']} {r.get('detail', '')} "
                      f"({r.get('seconds', 0)} s)", flush=True)
        finally:
            # The binaries as the sources are, whatever happened above.
            outputs = set()
            for m in mutants:
                outputs.update(selected_tests(args, m, known_outputs)[1])
            if outputs:
                build(args, sorted(outputs), log)
    text = table(results, sample=bool(args.only))
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"build and test output: {log_path}", file=sys.stderr)
    counted = [r for r in results if r["outcome"] in ("caught", "survived")]
    caught = sum(r["outcome"] == "caught" for r in counted)
    return 0 if counted and caught >= 0.9 * len(counted) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Interrupted as e:
        sys.exit(f"\ninterrupted ({e}); the planted file was restored")
