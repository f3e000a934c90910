#!/usr/bin/env bash
# Installs what tools/train_default needs, all from Debian bookworm:
#   - python3-torch (training), python3-debian (the deb822 reader);
#   - the text it trains on: wordnet-base, and the packages whose manual
#     pages it reads (MAN_PACKAGES in data.py, kept in step with this list);
#   - apt's English description index (Translation-en), fetched into
#     WORK/apt-lists with the machine's own apt sources, so that the system's
#     apt state is left as it was.
# Usage: tools/train_default/setup.sh WORK
set -euo pipefail

work=${1:?usage: setup.sh WORK}
packages=(
  python3-torch python3-numpy python3-debian wordnet-base man-db groff-base
  bsdextrautils
  manpages manpages-dev git-man openssl coreutils util-linux systemd
  openssh-client bash tar rsync gawk iproute2 procps dpkg apt debhelper make
  findutils grep sed gzip xz-utils perl-doc ncurses-bin
)

sudo=()
((EUID == 0)) || sudo=(sudo)
missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$pkg")
done
export DEBIAN_FRONTEND=noninteractive
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's images drop manual pages (dpkg's path-exclude); the pages of the
# packages above must be on disk.
if [[ -e /etc/dpkg/dpkg.cfg.d/excludes ]] &&
  grep -q '/usr/share/man' /etc/dpkg/dpkg.cfg.d/excludes; then
  echo "setup: this image excludes manual pages (/etc/dpkg/dpkg.cfg.d/excludes);" \
    "remove that line and reinstall: ${packages[*]}" >&2
  exit 1
fi

lists="$(realpath -m "$work")/apt-lists"
mkdir -p "$lists/partial"
"${sudo[@]}" apt-get update -qq -o Acquire::Languages=en \
  -o Dir::State::Lists="$lists"
echo "setup: apt's description index is in $lists"
