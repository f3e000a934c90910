#!/bin/sh
# Installs the client library (cmake --install --component favor_client)
# into a temporary prefix, checks what was installed, configures and builds
# the separate project tests/client/consumer/ against it with
# find_package(favor_client), and runs it against favor_client_fake_server.
#
#   consumer_test.sh CMAKE GENERATOR BUILD_DIR CONSUMER_SOURCE_DIR FAKE_SERVER
set -eu
cmake=$1 generator=$2 build_dir=$3 consumer_source=$4 fake_server=$5

work=$(mktemp -d "${TMPDIR:-/tmp}/favor_consumer_XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

prefix=$work/prefix
"$cmake" --install "$build_dir" --component favor_client --prefix "$prefix"

# What a user gets: the headers, the libraries and the package.
test -f "$prefix/include/favor/client.h"
test -f "$prefix/include/favor/tensor.h"
test -f "$prefix/include/favor/tokenize.h"
config=$(find "$prefix" -name favor_clientConfig.cmake)
test -n "$config"
test -f "$(dirname "$config")/favor_clientConfigVersion.cmake"
test -f "$(dirname "$config")/favor_clientTargets.cmake"
test -n "$(find "$prefix" -name libfavor_client.a)"
# The public headers stand on abseil alone: no protobuf, gRPC or LibTorch.
if grep -rlE '#include "(favor/v1/|grpcpp/|google/protobuf/|torch/)' \
    "$prefix/include/favor"; then
  echo "public headers include generated or third-party headers" >&2
  exit 1
fi

"$cmake" -S "$consumer_source" -B "$work/build" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
"$cmake" --build "$work/build"

"$fake_server" > "$work/server.out" 2> "$work/server.err" &
server_pid=$!
port=
for _ in $(seq 1 300); do
  port=$(sed -n 's/^port=//p' "$work/server.out")
  [ -n "$port" ] && break
  kill -0 "$server_pid" || { cat "$work/server.err" >&2; exit 1; }
  sleep 0.1
done
test -n "$port"

"$work/build/consumer" "127.0.0.1:$port"
