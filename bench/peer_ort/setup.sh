#!/bin/sh
# Installs ONNX Runtime for Node (onnxruntime-node, whose package carries
# its CPU library) into BUILD_DIR/peers, once: does nothing when it is there.
#
#   bench/peer_ort/setup.sh [BUILD_DIR]     (default: build)
#
# --onnxruntime-node-install=skip: the package's postinstall step would
# download GPU libraries from a host these machines cannot reach, and fail.
# Exit status 77 (a skip, for ctest) when npm cannot install it.
set -eu
version=1.30.0
prefix="${1:-build}/peers"
package="$prefix/node_modules/onnxruntime-node"
# Installed: this version, with its bundled CPU library.
set -- "$package"/bin/napi-v*/linux/x64/libonnxruntime.so.1
if [ -f "$1" ] && grep -q "\"version\": \"$version\"" "$package/package.json"; then
  exit 0
fi
mkdir -p "$prefix"
# One retry, 10 s apart at most: an unreachable registry is a skip in
# seconds rather than npm's minute of back-off.
if ! npm install --prefix "$prefix" --no-audit --no-fund \
    --fetch-retries=1 --fetch-retry-maxtimeout=10000 \
    "onnxruntime-node@$version" --onnxruntime-node-install=skip; then
  echo "setup.sh: npm could not install onnxruntime-node@$version" >&2
  exit 77
fi
