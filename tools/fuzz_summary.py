#!/usr/bin/env python3
"""The fuzz campaign's table (docs/reliability.md, "Campaign figures").

Reads the libFuzzer logs that tests/fuzz/run_fuzz.sh writes when
FAVOR_FUZZ_LOGS is set (`make fuzz` sets it to build-fuzz/campaign/) and
prints one Markdown row per target: executions and seconds summed over the
run's segments (run_fuzz.sh resumes after a timeout that was only the
machine's load), exec/s, edge coverage (`cov:`) and features (`ft:`) from
the first line after loading the corpus to the last line, the final
corpus, and the peak resident set.

Usage: tools/fuzz_summary.py LOG_FOLDER [TARGET ...]   (default: every log)
Python 3 standard library only.
"""
import os
import re
import sys

HEADER = ("| Target | Executions | exec/s | `cov:` | `ft:` | Corpus | Peak RSS |\n"
          "| --- | ---: | ---: | --- | --- | --- | ---: |")
STATUS = re.compile(r"cov: (\d+) ft: (\d+) corp: (\d+)/(\d+)(b|Kb|Mb)")
UNIT = {"b": 1, "Kb": 1 << 10, "Mb": 1 << 20}


def summarise(name, text):
    """One row, or an exception naming what the log lacks."""
    executions = sum(map(int, re.findall(
        r"stat::number_of_executed_units: (\d+)", text)))
    # run_fuzz.sh's own time, resumed segments included; else libFuzzer's.
    wall = re.findall(r"run_fuzz: fuzzed for (\d+) s", text)
    seconds = int(wall[-1]) if wall else sum(map(int, re.findall(
        r"Done \d+ runs in (\d+) second", text)))
    rss = max(map(int, re.findall(r"stat::peak_rss_mb:\s+(\d+)", text)),
              default=0)
    inited = re.search(r"INITED " + STATUS.pattern, text)
    lines = STATUS.findall(text)
    if not (executions and seconds and inited and lines):
        raise ValueError(f"{name}: no complete libFuzzer run in the log")
    cov, ft, corp, size, unit = lines[-1]
    corpus_kb = int(size) * UNIT[unit] / 1024
    return (f"| `{name}` | {executions:,} | {executions / seconds:,.0f} | "
            f"{int(inited.group(1)):,} → {int(cov):,} | "
            f"{int(inited.group(2)):,} → {int(ft):,} | "
            f"{int(corp):,} inputs, {corpus_kb:,.0f} KB | {rss:,} MB |")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    folder = argv[1]
    names = argv[2:] or sorted(f[:-len(".log")] for f in os.listdir(folder)
                               if f.endswith(".log"))
    print(HEADER)
    for name in names:
        with open(os.path.join(folder, name + ".log"), errors="replace") as f:
            try:
                print(summarise(name, f.read()))
            except ValueError as error:  # a run that ended before its stats
                print(f"| `{name}` | {error} | | | | | |")


if __name__ == "__main__":
    main(sys.argv)
