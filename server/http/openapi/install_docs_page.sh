#!/usr/bin/env bash
# Installs favor-server's /docs page (server/http/docs_page.h): npm's
# swagger-ui-dist, pinned by package.json here, into <npm dir>, then the
# files the page needs, with Swagger UI's licence, and index.html into
# <page dir>, marked complete by <page dir>/.installed.
#
# When npm is missing or the registry unreachable, the page is left out:
# this says so and exits 0, so that favor-server still builds (its /docs
# then answers 503 naming the missing folder, and the browser test
# tests/http/docs_browser_test.py fails); the next build tries again.
# The build passes this folder as <npm dir> too, so that npm's copy sits in
# node_modules/ here, where the container's build context finds it (the
# image's build then needs no registry, as with tools/bert_vocab).
# Usage: install_docs_page.sh <this folder> <npm dir> <page dir>
set -euo pipefail

src=${1:?usage: install_docs_page.sh <source dir> <npm dir> <page dir>}
npm_dir=${2:?usage: install_docs_page.sh <source dir> <npm dir> <page dir>}
page=${3:?usage: install_docs_page.sh <source dir> <npm dir> <page dir>}
dist=$npm_dir/node_modules/swagger-ui-dist
# What index.html loads, and the licences and notice that come with it
# (Swagger UI's, Apache-2.0, and those of what its bundle holds).
files=(swagger-ui-bundle.js swagger-ui.css favicon-32x32.png favicon-16x16.png
       LICENSE NOTICE swagger-ui-bundle.js.LICENSE.txt)

left_out() {
  echo "install_docs_page: WARNING: $*; favor-server is built without its" \
    "/docs page (GET /docs answers 503; GET /openapi.json is unaffected)" >&2
  rm -rf "$page"
  exit 0
}

mkdir -p "$npm_dir"
if ! cmp -s "$src/package.json" "$npm_dir/package.json" ||
   [[ ! -f "$dist/swagger-ui-bundle.js" ]]; then
  command -v npm >/dev/null || left_out "npm is missing"
  [[ "$src/package.json" -ef "$npm_dir/package.json" ]] ||
    cp "$src/package.json" "$npm_dir/package.json"
  # swagger-ui-dist depends on @scarf/scarf, whose install step reports the
  # installation to scarf.sh unless told not to.
  SCARF_ANALYTICS=false npm install --prefix "$npm_dir" --no-package-lock \
    --no-audit --no-fund --loglevel=error ||
    left_out "npm install of swagger-ui-dist failed"
fi
rm -rf "$page"
mkdir -p "$page"
for file in "${files[@]}"; do
  [[ -f "$dist/$file" ]] || left_out "swagger-ui-dist has no $file"
  cp "$dist/$file" "$page/$file"
done
cp "$src/index.html" "$page/index.html"
version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$dist/package.json" | head -1)
echo "swagger-ui-dist $version (npm), Apache-2.0: LICENSE and NOTICE;" \
  "the bundle's parts: swagger-ui-bundle.js.LICENSE.txt" > "$page/README"
touch "$page/.installed"
