#!/usr/bin/env bash
# Installs the npm packages of tests/http/package.json (the official OpenAI
# client, an OpenAPI validator, playwright-core) into <out>/node_modules,
# once: the only step of the HTTP tests that
# needs the network (the npm registry). Fails, never skips, when node or npm
# is missing (scripts/install-deps.sh installs them).
# Usage: install_peers.sh <source root> <out dir>
set -euo pipefail

root=${1:?usage: install_peers.sh <source root> <out dir>}
out=${2:?usage: install_peers.sh <source root> <out dir>}

fail() {
  echo "install_peers: $*" >&2
  exit 1
}

command -v node >/dev/null || fail "node is missing"
mkdir -p "$out"
if ! cmp -s "$root/tests/http/package.json" "$out/package.json" ||
   [[ ! -d "$out/node_modules/openai" ]] ||
   [[ ! -d "$out/node_modules/@apidevtools/swagger-parser" ]] ||
   [[ ! -d "$out/node_modules/playwright-core" ]]; then
  command -v npm >/dev/null || fail "npm is missing"
  echo "install_peers: installing the pinned npm packages into $out"
  cp "$root/tests/http/package.json" "$out/package.json"
  npm install --prefix "$out" --no-package-lock --no-audit --no-fund \
    --loglevel=error || fail "npm install failed"
fi
