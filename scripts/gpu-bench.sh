#!/usr/bin/env bash
# The GPU check in one command: checks nvcc, builds the compute-only part of
# Favor (attention and model libraries, favor-model, their tests and
# benchmarks) against the machine's CUDA LibTorch, runs the CUDA tests (a
# skip for lack of CUDA is a failure), runs `favor-model verify --device
# cuda` in float32, bfloat16 and float16 against the CPU and `favor-model
# compare` on CUDA, runs the encoder (model_bench --device=cuda) and the
# attention benchmarks on the GPU beside LibTorch's own
# scaled_dot_product_attention in float32 and bfloat16 (FlashAttention) in
# the same run, then builds the rest and runs the whole compute-only suite.
# Each step has a time limit (BUILD_SECONDS, MODEL_BENCH_SECONDS,
# ATTENTION_BENCH_SECONDS, REST_SECONDS, CTEST_SECONDS), so that one call of
# the GPU machine always ends with the summary table, printed last.
# Everything goes under $OUT (default ./gpu-out); the exit status is 1 when
# any step failed.
#
# First run on a GPU 2026-11-30 (an H200, PyTorch 2.11's wheel, CUDA 13):
# docs/gpu.md has what passed, what failed and what was fixed since.
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
# CMake 4 refuses packages whose files ask for policies older than 3.5.
export CMAKE_POLICY_VERSION_MINIMUM=3.5
cd "$(dirname "$0")/.." || exit 1

debs=(libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libabsl-dev
      libabsl20220623 libgoogle-glog-dev libgoogle-glog0v6 libgflags-dev
      libgflags2.2 nlohmann-json3-dev libunwind-dev libutf8proc-dev
      libutf8proc2 libsentencepiece-dev libsentencepiece0 libpcre2-dev
      libpcre2-8-0 libunwind8 pkgconf-bin libpkgconf3)
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

# ---- the machine, nvcc and the device
record host "$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null), g++ $(g++ -dumpfullversion 2>/dev/null), $(cmake --version | head -1), $(nproc) CPUs"
if ! command -v nvcc >/dev/null; then
  for dir in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [[ -x "$dir/nvcc" ]]; then PATH="$dir:$PATH"; break; fi
  done
fi
if ! command -v nvcc >/dev/null; then
  record nvcc "missing: a CUDA toolkit is needed (Debian 13: nvidia-cuda-toolkit)" fail
  exit 1
fi
record nvcc "$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') ($(command -v nvcc))"
record gpu "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"

# ---- the Debian packages, unpacked under $deps: their CMake and pkg-config
# files name /usr, so they are pointed at $deps/usr. Their libraries go on
# LD_LIBRARY_PATH only for what this script builds and runs (with_deps), not
# for the machine's own tools, whose libraries (PCRE2's) they could shadow.
deps=/opt/deps
prefix=()
deps_lib=
if compgen -G ".gpu/*.deb" >/dev/null; then
  mkdir -p "$deps"
  for f in .gpu/*.deb; do dpkg -x "$f" "$deps"; done
  grep -rlZ '/usr' "$deps/usr/lib/x86_64-linux-gnu/pkgconfig" \
      "$deps/usr/share/pkgconfig" "$deps/usr/lib/x86_64-linux-gnu/cmake" 2>/dev/null |
    xargs -0 -r sed -i -E "s#(^|[\"=; (])/usr(/|\"|\$)#\1$deps/usr\2#g"
  prefix=("$deps/usr" "$deps/usr/lib/x86_64-linux-gnu/cmake")
  deps_lib="$deps/usr/lib/x86_64-linux-gnu"
  export PKG_CONFIG_PATH="$deps_lib/pkgconfig:$deps/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  # pkg-config itself, where the machine has none (the packages bring pkgconf).
  command -v pkg-config >/dev/null || PATH="$PATH:$deps/usr/bin"
fi
with_deps() {
  if [[ -z "$deps_lib" ]]; then "$@"; return; fi
  LD_LIBRARY_PATH="$deps_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}
if torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
  prefix=("$torch_prefix" "${prefix[@]}")
  record libtorch "$(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
else
  record libtorch "the system's (no torch for python3)"
fi
cmake_prefix=$(IFS=';'; echo "${prefix[*]}")
# LibTorch's CMake wants the GPU's architecture; the card's own, by default.
if [[ -z "${TORCH_CUDA_ARCH_LIST:-}" ]]; then
  TORCH_CUDA_ARCH_LIST=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
  export TORCH_CUDA_ARCH_LIST
fi

# ---- configure and build: what the GPU checks need first, then the rest
# (-k 0: every compile error at once). Each step has a time limit, so that
# one call of the GPU machine ends with a summary.
seconds_since() { echo $(( $(date +%s) - $1 )); }
started=$(date +%s)
if ! with_deps cmake -S . -B "$BUILD" -G Ninja -DFAVOR_COMPUTE_ONLY=ON \
    -DCMAKE_PREFIX_PATH="$cmake_prefix" \
    -DCMAKE_LIBRARY_PATH="$deps_lib" >"$OUT/configure.log" 2>&1; then
  record configure "FAILED (configure.log)" fail
  tail -30 "$OUT/configure.log"
  exit 1
fi
record configure "ok in $(seconds_since "$started") s"
started=$(date +%s)
gpu_targets=(model_test attention_attention_test favor_model_cli model_bench attention_bench)
if ! with_deps timeout "${BUILD_SECONDS:-420}" cmake --build "$BUILD" -j "$(nproc)" \
    --target "${gpu_targets[@]}" -- -k 0 >"$OUT/build.log" 2>&1; then
  record build "FAILED in $(seconds_since "$started") s (build.log)" fail
  grep -m 40 -B2 -A6 'error' "$OUT/build.log"
  exit 1
fi
record build "the GPU checks' targets in $(seconds_since "$started") s"

# A program that died of a signal (exit status 128 + N) runs again under a
# debugger (cuda-gdb there, which debugs host code too; else gdb), and its
# backtrace goes into backtraces.txt: the GPU machine has no core dumps to
# read afterwards.
backtrace() {  # backtrace EXIT_STATUS PROGRAM ARGS...
  local code=$1; shift
  ((code > 128)) || return 0
  local debugger
  debugger=$(command -v cuda-gdb || command -v gdb) || return 0
  {
    echo "== $* (exit $code)"
    with_deps timeout 120 "$debugger" -q -batch -ex run -ex 'bt 30' --args "$@" 2>&1 |
      grep -E -A32 'received signal|^Program terminated' | head -40
  } >>"$OUT/backtraces.txt"
  echo "backtrace of $1 in $OUT/backtraces.txt:"
  grep -A6 "== $1" "$OUT/backtraces.txt" | tail -6
}

# ---- the CUDA tests: a skip is a failure here
cuda_test() {  # cuda_test NAME BINARY
  local log="$OUT/$1.txt"
  with_deps timeout 300 "$BUILD/$2" --gtest_filter='*Cuda*' >"$log" 2>&1
  local code=$? ran
  backtrace "$code" "$BUILD/$2" --gtest_filter='*Cuda*'
  ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran\..*/\1/p' "$log")
  if ((code != 0)) || grep -q '^\[  SKIPPED \]' "$log" || [[ "${ran:-0}" == 0 ]]; then
    record "$1" "FAILED or skipped (exit $code; $log)" fail
    grep -E -A12 '^\[ RUN|Failure|error' "$log" | head -60
  else
    record "$1" "$ran passed"
  fi
}
cuda_test "attention CUDA tests" tests/attention/attention_attention_test
cuda_test "encoder on CUDA, every dtype" tests/model/model_test

# ---- favor-model verify on CUDA, each dtype against float32 on the CPU:
# the relative difference of the outputs' sum of |x|; then `compare`, the
# pooled embeddings' cosine of bfloat16 and float16 against float32, on CUDA.
favor_model="$BUILD/server/model/tools/favor-model"
model_dir="$BUILD/models/default"
checksum() { sed -n 's/.*sum|x| \([0-9.]*\).*/\1/p' "$1"; }
with_deps "$favor_model" verify "$model_dir" >"$OUT/verify-cpu.txt" 2>&1
cpu_sum=$(checksum "$OUT/verify-cpu.txt")
for dtype in float32 bfloat16 float16; do
  log="$OUT/verify-cuda-$dtype.txt"
  bound=$([[ $dtype == float32 ]] && echo 1e-4 || echo 2e-2)
  if with_deps timeout 120 "$favor_model" verify "$model_dir" --device cuda \
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
    tail -5 "$log"
  fi
done
for dtype in bfloat16 float16; do
  log="$OUT/compare-cuda-$dtype.txt"
  if with_deps timeout 120 "$favor_model" compare "$model_dir" --device cuda \
      --dtype "$dtype" --peak_logits=0 >"$log" 2>&1; then
    record "compare cuda $dtype" "$(grep -o 'mean [0-9.]*, min [0-9.]*' "$log" | head -1); $(grep -o 'tokens/s: .*' "$log" | head -1)"
  else
    record "compare cuda $dtype" "FAILED ($log)" fail
    tail -5 "$log"
  fi
done

# ---- benchmarks. The encoder (model_bench's rows: FAVOR+ in float32 and
# bfloat16, exact attention in float32) on the GPU, then Favor's attention
# beside LibTorch's fused attention (Sdpa, SdpaBF16: FlashAttention in
# bfloat16), in the same run.
model_bench=("$BUILD/bench/model_bench" --device=cuda --benchmark_min_time=0.3)
with_deps timeout "${MODEL_BENCH_SECONDS:-120}" "${model_bench[@]}" \
  >"$OUT/model_bench.txt" 2>&1
model_bench_status=$?
if ((model_bench_status == 0)); then
  while IFS= read -r row; do record "${row%%|*}" "${row#*|}"; done < <(
    sed 's/\x1b\[[0-9;]*m//g' "$OUT/model_bench.txt" |
      awk '$1 ~ /^(favor\+|exact)/ { for (i = 1; i <= NF; ++i) if ($i ~ /^tokens\/s=/) { v = substr($i, 10); sub(/\/s$/, "", v); sub(/\/real_time$/, "", $1); print "model_bench " $1 "|" v " tokens/s" } }')
else
  record "model_bench (cuda)" "FAILED or over its time ($OUT/model_bench.txt)" fail
  tail -5 "$OUT/model_bench.txt"
  backtrace "$model_bench_status" "${model_bench[@]}" '--benchmark_filter=favor\+/L=512/'
fi
bench_json="$OUT/attention_bench.json"
if FAVOR_BENCH_DEVICE=cuda with_deps timeout "${ATTENTION_BENCH_SECONDS:-150}" \
    "$BUILD/bench/attention_bench" \
    --benchmark_filter='^(Sdpa|SdpaBF16|Exact|Favor|FavorBF16|FavorCausal)/' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$bench_json" --benchmark_out_format=json >"$OUT/attention_bench.txt" 2>&1; then
  while IFS= read -r row; do record "${row%%|*}" "${row#*|}"; done < <(python3 - "$bench_json" <<'EOF2'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        rate = b.get("tokens/s", 0)
        print(f"{b['run_name']}|{b['real_time']:.3f} {b['time_unit']} median, {rate / 1e6:.2f} M tokens/s")
EOF2
)
else
  record "attention_bench (cuda)" "FAILED or over its time ($OUT/attention_bench.txt)" fail
  tail -5 "$OUT/attention_bench.txt"
fi

# ---- last, the rest of the compute-only build and its whole suite (the
# CPU tests on this LibTorch), in what time is left.
started=$(date +%s)
if with_deps timeout "${REST_SECONDS:-240}" cmake --build "$BUILD" -j "$(nproc)" -- -k 0 \
    >>"$OUT/build.log" 2>&1; then
  record "build (all)" "ok in $(seconds_since "$started") s"
  if with_deps timeout "${CTEST_SECONDS:-240}" ctest --test-dir "$BUILD" \
      --output-on-failure -j "$(nproc)" >"$OUT/ctest.txt" 2>&1; then
    record ctest "$(grep -o '[0-9]*% tests passed.*' "$OUT/ctest.txt")"
  else
    record ctest "FAILED or over its time: $(grep -o '[0-9]*% tests passed.*' "$OUT/ctest.txt")" fail
    grep -A40 'The following tests FAILED' "$OUT/ctest.txt" | head -40
  fi
else
  record "build (all)" "FAILED or over its time (build.log)" fail
fi
exit "$failed"
