#!/usr/bin/env bash
# Each program given links libstdc++ before LibTorch: libstdc++.so.6 comes
# before every libtorch*.so among its NEEDED entries, so that its calls into
# the C++ runtime bind to libstdc++'s own functions rather than to the copies
# that PyTorch's own LibTorch builds export (cmake/FavorWarnings.cmake,
# favor_link_torch, says why; docs/gpu.md what it broke).
#   link_order_test.sh PROGRAM...
set -u
status=0
for program in "$@"; do
  needed=$(readelf -d "$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if [[ -z "$needed" ]]; then
    echo "FAIL: $program: readelf found no NEEDED entries"
    status=1
    continue
  fi
  stdcxx=$(grep -n '^libstdc++\.so' <<<"$needed" | head -1 | cut -d: -f1)
  torch=$(grep -n '^libtorch' <<<"$needed" | head -1 | cut -d: -f1)
  if [[ -z "$torch" ]]; then
    echo "FAIL: $program needs no libtorch*.so; this test is for programs that do"
    status=1
  elif [[ -z "$stdcxx" || "$stdcxx" -gt "$torch" ]]; then
    echo "FAIL: $program: libstdc++.so.6 is not before LibTorch among its libraries:"
    echo "$needed" | sed 's/^/  /'
    status=1
  else
    echo "ok: $program: libstdc++ is library $stdcxx, LibTorch's first is $torch"
  fi
done
exit "$status"
