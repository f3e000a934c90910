#!/bin/bash
# Prints the Debian packages that own the shared libraries the given
# binaries need directly (their NEEDED entries, located by ldd, then
# dpkg -S; apt brings what those need), one per line, sorted: what an image's
# runtime stage installs, so that one Dockerfile serves Debian 12 and 13,
# whose runtime package names differ (libtorch1.13 / libtorch2.6,
# libprotobuf32 / libprotobuf32t64, ...). A library that ldd finds and no
# package owns is an error; one that ldd cannot find is named on stderr
# and left out (the CUDA image built without cuDNN: docs/gpu.md).
set -euo pipefail

owner() {  # the package owning library path $1 (usrmerge: /lib = /usr/lib)
  local path=$1 real
  real=$(readlink -f "$path")
  for candidate in "$path" "$real" "/usr${path#/usr}" "${real#/usr}"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
  return 1
}

needed=$(for binary in "$@"; do
  readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
done | sort -u)
libraries=$(for binary in "$@"; do ldd "$binary"; done)
missing=$(sed -n 's/^[[:space:]]*\([^ ]*\) => not found$/\1/p' <<<"$libraries" | sort -u)
if [[ -n "$missing" ]]; then
  echo "runtime-packages: not found, left out: $(tr '\n' ' ' <<<"$missing")" >&2
fi
while read -r name; do
  sed -n "s|^[[:space:]]*${name//./\\.} => \\(/[^ ]*\\) (.*|\\1|p" <<<"$libraries" | head -1
done <<<"$needed" | sort -u |
  while read -r library; do
    if ! owner "$library"; then
      echo "runtime-packages: no package owns $library" >&2
      exit 1
    fi
  done | sort -u
