#!/bin/bash
# apt-get install PACKAGE..., from Debian 13's main, contrib and non-free,
# where Debian's CUDA LibTorch (libtorch-cuda-*, contrib) depends on
# nvidia-cudnn: a downloader whose post-install script fetches cuDNN from
# NVIDIA's site. Where that site is reachable, this is a plain apt-get
# install. With ALLOW_CUDNN_DOWNLOAD_FAILURE=1 (a sandbox without that
# site: docs/gpu.md), nvidia-cudnn's configuration, and that of the packages
# that wait on it, may fail, which leaves them unpacked (enough to compile
# and link); any other failure still fails, and the line saying what was
# left unconfigured is printed. Used by Dockerfile.gpu's two stages.
set -euo pipefail

downloader=nvidia-cudnn
log=$(mktemp)
# contrib and non-free: deb822 sources (debian:trixie-slim) or a one-line
# sources.list (a debootstrapped root).
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  sed -i 's/^Components: main$/Components: main contrib non-free/' \
    /etc/apt/sources.list.d/debian.sources
fi
if [[ -f /etc/apt/sources.list ]]; then
  sed -i 's/^\(deb .*\) main$/\1 main contrib non-free/' /etc/apt/sources.list
fi
apt-get update
status=0
apt-get install -y --no-install-recommends "$@" 2>&1 | tee "$log" || status=$?
if ((status == 0)); then
  rm -f "$log"
  exit 0
fi
if [[ "${ALLOW_CUDNN_DOWNLOAD_FAILURE:-0}" != 1 ]]; then
  echo "apt-install-cuda: apt-get install failed (exit $status)" >&2
  exit "$status"
fi
# dpkg's lines, without the carriage returns a terminal may have added.
tr -d '\r' <"$log" >"$log.clean"
mv "$log.clean" "$log"
failed=$(sed -n 's/^dpkg: error processing package \([^ ]*\) (--configure).*/\1/p' "$log" |
  sort -u)
# Those that failed only because a package they depend on did.
waiting=$( (grep -A1 '^dpkg: error processing package .* (--configure):$' "$log" || true) |
  (grep -B1 '^ dependency problems' || true) |
  sed -n 's/^dpkg: error processing package \([^ ]*\) (--configure):$/\1/p' | sort -u)
others=$(comm -23 <(echo "$failed") <(printf '%s\n' $waiting "$downloader" | sort -u) |
  sed '/^$/d')
rm -f "$log"
if [[ -z "$failed" || -n "$others" ]]; then
  echo "apt-install-cuda: apt-get install failed other than by $downloader's" \
       "download (exit $status; failed: ${others:-none named})" >&2
  exit 1
fi
echo "apt-install-cuda: NOT DONE HERE: $downloader could not download cuDNN;" \
     "left unpacked, not configured: $(echo $failed)"
