#!/usr/bin/env bash
# The GPU check in one command: checks nvcc, builds the
# compute-only part of Favor (attention and model libraries, favor-model,
# their tests and benchmarks) against the machine's CUDA LibTorch, runs the
# CUDA tests (a skip for lack of CUDA is a failure), runs
# `favor-model verify --device cuda` in float32, bfloat16 and float16 against
# the CPU, runs the attention benchmarks on the GPU beside LibTorch's own
# scaled_dot_product_attention in float32 and bfloat16 (FlashAttention) in
# the same run, and prints a summary table last. Everything goes under $OUT
# (default ./gpu-out); the exit status is 1 when any step failed.
#
# NEVER RUN ON A GPU: no GPU has been lent to this project yet. What was
# checked without one (docs/gpu.md): the same sources configure against
# Debian 13's CUDA LibTorch 2.6 with nvcc 12.4, and favor-server,
# favor-model, the attention and model tests and the benchmarks compile and
# link there (ctest's trixie.Cuda). This script's own steps (the test
# filters, verify's comparison, the benchmark table) have not run; the
# first GPU session should fix what they get wrong.
#
# LibTorch: the Python torch package's (`torch.utils.cmake_prefix_path`)
# when python3 has one, else the system's (Debian 13: libtorch-cuda-dev).
# On the lent GPU machine, which has no GoogleTest, Google Benchmark, abseil
# and the other headers, they come as Debian packages downloaded here into
# .gpu/ and unpacked there:
#   here:  echo /.gpu/ >> .git/info/exclude; mkdir -p .gpu
#          (cd .gpu && apt-get download $(scripts/gpu-bench.sh --debs))
#          tools/bert_vocab/install.sh    (the default model's vocabulary)
#   there: scripts/gpu-bench.sh            (with .gpu and
#          tools/bert_vocab/node_modules carried along: no registry there)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

debs=(libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libabsl-dev
      libabsl20220623 libgoogle-glog-dev libgoogle-glog0v6 libgflags-dev
      libgflags2.2 nlohmann-json3-dev libunwind-dev libutf8proc-dev
      libutf8proc2 libsentencepiece-dev libsentencepiece0 libpcre2-dev
      libpcre2-8-0)
if [[ "${1:-}" == "--debs" ]]; then printf '%s\n' "${debs[@]}"; exit 0; fi

OUT=${OUT:-$PWD/gpu-out}
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-bench.log") 2>&1

summary=()  # "step|result" rows of the table printed last
failed=0
record() {  # record STEP RESULT [fail]
  summary+=("$1|$2")
  [[ "${3:-}" == fail ]] && failed=1
  echo "gpu-bench: $1: $2"
}
print_summary() {
  echo
  echo "gpu-bench summary (full output in $OUT):"
  printf '  %-34s %s\n' step result
  local row
  for row in "${summary[@]}"; do printf '  %-34s %s\n' "${row%%|*}" "${row#*|}"; done
}
trap print_summary EXIT

# ---- nvcc and the device
if ! command -v nvcc >/dev/null; then
  record nvcc "missing: a CUDA toolkit is needed (Debian 13: nvidia-cuda-toolkit)" fail
  exit 1
fi
record nvcc "$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
record gpu "$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | head -1)"

# ---- configure and build
deps=/opt/deps
prefix=()
if compgen -G ".gpu/*.deb" >/dev/null; then
  mkdir -p "$deps"
  for f in .gpu/*.deb; do dpkg -x "$f" "$deps"; done
  prefix=("$deps/usr" "$deps/usr/lib/x86_64-linux-gnu/cmake")
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
if torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
  prefix=("$torch_prefix" "${prefix[@]}")
  record libtorch "$(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
else
  record libtorch "the system's (no torch for python3)"
fi
cmake_prefix=$(IFS=';'; echo "${prefix[*]}")
if ! cmake -S . -B "$BUILD" -G Ninja -DFAVOR_COMPUTE_ONLY=ON \
    -DCMAKE_PREFIX_PATH="$cmake_prefix" \
    -DCMAKE_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu" >"$OUT/configure.log" 2>&1 ||
   ! cmake --build "$BUILD" -j "$(nproc)" >"$OUT/build.log" 2>&1; then
  record build "FAILED (see $OUT/configure.log, build.log)" fail
  exit 1
fi
record build ok

# ---- the CUDA tests: a skip is a failure here
cuda_test() {  # cuda_test NAME BINARY
  local log="$OUT/$1.txt"
  "$BUILD/$2" --gtest_filter='*Cuda*' >"$log" 2>&1
  local code=$? ran
  ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran\..*/\1/p' "$log")
  if ((code != 0)) || grep -q '^\[  SKIPPED \]' "$log" || [[ "${ran:-0}" == 0 ]]; then
    record "$1" "FAILED or skipped (exit $code; $log)" fail
  else
    record "$1" "$ran passed"
  fi
}
cuda_test "attention CUDA tests" tests/attention/attention_attention_test
cuda_test "encoder on CUDA, every dtype" tests/model/model_test

# The whole compute-only suite as well (CPU tests on this LibTorch).
if ctest --test-dir "$BUILD" --output-on-failure -j 4 >"$OUT/ctest.txt" 2>&1; then
  record ctest "$(grep -o '[0-9]*% tests passed.*' "$OUT/ctest.txt")"
else
  record ctest "FAILED: $(grep -o '[0-9]*% tests passed.*' "$OUT/ctest.txt")" fail
fi

# ---- favor-model verify on CUDA, each dtype against float32 on the CPU:
# the relative difference of the outputs' sum of |x|.
model_dir="$BUILD/models/default"
checksum() { sed -n 's/.*sum|x| \([0-9.]*\).*/\1/p' "$1"; }
"$BUILD/server/model/tools/favor-model" verify "$model_dir" >"$OUT/verify-cpu.txt" 2>&1
cpu_sum=$(checksum "$OUT/verify-cpu.txt")
for dtype in float32 bfloat16 float16; do
  log="$OUT/verify-cuda-$dtype.txt"
  bound=$([[ $dtype == float32 ]] && echo 1e-4 || echo 2e-2)
  if "$BUILD/server/model/tools/favor-model" verify "$model_dir" --device cuda \
      --dtype "$dtype" >"$log" 2>&1 && [[ -n "$cpu_sum" ]]; then
    verdict=$(python3 -c "import sys; a, b, t = map(float, sys.argv[1:]); \
d = abs(a - b) / b; print(f'{d:.2e} {\"ok\" if d <= t else \"MISSED\"} (bound {t:g})')" \
      "$(checksum "$log")" "$cpu_sum" "$bound")
    if [[ "$verdict" == *MISSED* ]]; then
      record "verify cuda $dtype" "sum|x| vs CPU: $verdict" fail
    else
      record "verify cuda $dtype" "sum|x| vs CPU: $verdict"
    fi
  else
    record "verify cuda $dtype" "FAILED ($log)" fail
  fi
done

# ---- benchmarks: Favor's kernels on the GPU beside LibTorch's fused
# attention (Sdpa, SdpaBF16: FlashAttention in bfloat16), in the same run.
bench_json="$OUT/attention_bench.json"
if FAVOR_BENCH_DEVICE=cuda "$BUILD/bench/attention_bench" \
    --benchmark_filter='^(Sdpa|SdpaBF16|Exact|Favor|FavorBF16|FavorCausal)/' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$bench_json" --benchmark_out_format=json >"$OUT/attention_bench.txt" 2>&1; then
  while IFS= read -r row; do record "${row%%|*}" "${row#*|}"; done < <(python3 - "$bench_json" <<'EOF'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        rate = b.get("tokens/s", 0)
        print(f"{b['run_name']}|{b['real_time']:.2f} ms median, {rate / 1e6:.2f} M tokens/s")
EOF
)
else
  record "attention_bench (cuda)" "FAILED ($OUT/attention_bench.txt)" fail
fi
exit "$failed"
