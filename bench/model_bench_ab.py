#!/usr/bin/python3
"""Two model_bench commands in turns, tokens/s of each row, best and median.

    bench/model_bench_ab.py 'A command' 'B command' ROW_REGEX [ROUNDS]

e.g. the BLAS against the register tiles, or an older build against this:

    bench/model_bench_ab.py 'build/bench/model_bench --gemm_kernel=portable' \\
        build/bench/model_bench '^favor\\+/(L=512|L=4096|64x128)/' 10

On a shared machine whose speed drifts from minute to minute, only ratios
from the same minutes mean anything: each round runs A, then B, each row
for about half a second; interference only ever slows a run, so the best
of the rounds is the better estimate of what each does, and the median is
printed beside it.
"""
import os
import re
import shlex
import statistics
import subprocess
import sys


def run(command, rows):
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    out = subprocess.run(
        shlex.split(command) +
        [f"--benchmark_filter={rows}", "--benchmark_min_time=0.5"],
        capture_output=True, text=True, env=env, check=True).stdout
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^((?:favor|exact)[^ ]*(?: (?:bf16|int8)/\S+)?)\s.*?tokens/s=([\d.]+)k", out,
        re.M)}


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    a, b, rows = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) == 5 else 6
    results = {}
    for _ in range(rounds):
        for who, command in (("A", a), ("B", b)):
            for row, rate in run(command, rows).items():
                results.setdefault(row, {"A": [], "B": []})[who].append(rate)
    print(f"{'row':30s} {'best A':>8s} {'best B':>8s} {'B/A':>5s}"
          f" {'median A':>9s} {'median B':>9s}")
    for row, rates in results.items():
        best_a, best_b = max(rates["A"]), max(rates["B"])
        print(f"{row:30s} {best_a:7.2f}k {best_b:7.2f}k {best_b / best_a:5.2f}"
              f" {statistics.median(rates['A']):8.2f}k"
              f" {statistics.median(rates['B']):8.2f}k")


if __name__ == "__main__":
    main()
