#!/usr/bin/env bash
# Builds the compute-only part of Favor (attention and model libraries, their
# tests and benchmarks) against the GPU machine's LibTorch, runs the tests and
# the benchmarks, and writes everything under $OUT (default ./gpu-out).
#
# On the GPU machine (see docs/gpu.md): LibTorch comes from the Python torch
# package; GoogleTest, Google Benchmark, abseil and the other headers come
# from Debian packages downloaded here into .gpu/ and unpacked there:
#   here:  echo /.gpu/ >> .git/info/exclude; mkdir -p .gpu
#          (cd .gpu && apt-get download $(scripts/gpu-bench.sh --debs))
#          tools/bert_vocab/install.sh    (the default model's vocabulary)
#   there: scripts/gpu-bench.sh            (with .gpu and
#          tools/bert_vocab/node_modules carried along: no registry there)
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libabsl-dev
      libabsl20220623 libgoogle-glog-dev libgoogle-glog0v6 libgflags-dev
      libgflags2.2 nlohmann-json3-dev libunwind-dev libutf8proc-dev
      libutf8proc2 libsentencepiece-dev libsentencepiece0)
if [[ "${1:-}" == "--debs" ]]; then printf '%s\n' "${debs[@]}"; exit 0; fi

OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-bench.log") 2>&1

deps=/opt/deps
mkdir -p "$deps"
for f in .gpu/*.deb; do dpkg -x "$f" "$deps"; done
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

cmake -S . -B build-gpu -G Ninja -DFAVOR_COMPUTE_ONLY=ON \
  -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/usr;$deps/usr/lib/x86_64-linux-gnu/cmake" \
  -DCMAKE_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu"
cmake --build build-gpu -j "$(nproc)"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
ctest --test-dir build-gpu --output-on-failure -j 4 | tee "$OUT/ctest.txt"
FAVOR_BENCH_DEVICE=cuda build-gpu/bench/attention_bench \
  --benchmark_out="$OUT/attention_bench.json" --benchmark_out_format=json
