#!/usr/bin/env bash
# Runs `buf lint` on proto/ with the rules of proto/buf.yaml.
# Usage: buf_lint.sh <source root> <cache dir>
#
# buf comes from npm (@bufbuild/buf ships a native binary per platform),
# pinned to one exact version by tools/buf/package.json (tools/buf/README.md
# says why there is no lock file). When tools/buf/node_modules lacks it, this
# installs it once (the only step that needs the network); after that the
# lint runs offline. A missing buf is a failure, never a skip:
# an unlinted API must not pass as a linted one.
set -euo pipefail

root=${1:?usage: buf_lint.sh <source root> <cache dir>}
cache_dir=${2:?usage: buf_lint.sh <source root> <cache dir>}
tools_dir="$root/tools/buf"
buf="$tools_dir/node_modules/.bin/buf"

fail() {
  echo "buf_lint: $*" >&2
  echo "buf_lint: install buf with:" \
    "npm install --prefix tools/buf --no-package-lock" >&2
  exit 1
}

if [[ ! -x "$buf" ]]; then
  command -v npm >/dev/null || fail "buf is not installed and npm is missing"
  echo "buf_lint: installing buf into $tools_dir"
  npm install --prefix "$tools_dir" --no-package-lock --no-audit --no-fund \
    --loglevel=error || fail "npm install failed"
  [[ -x "$buf" ]] || fail "npm install did not install $buf"
fi

"$buf" --version >/dev/null || fail "$buf does not run"
# buf keeps a cache in $HOME by default; keep the test's inside the build.
export BUF_CACHE_DIR="$cache_dir"
cd "$root/proto"
"$buf" lint
echo "buf_lint: proto/ is lint clean"
