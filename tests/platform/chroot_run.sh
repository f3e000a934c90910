#!/usr/bin/env bash
# Runs a command as root in a Debian root made by debootstrap, the way the
# trixie test needs it: /proc, /dev and /sys bind-mounted (/dev and /sys
# recursively, so /dev/shm and /dev/pts come along), host folders
# bind-mounted where asked, the host's resolver and CA bundle copied in (npm
# must trust what the host trusts), and a clean environment. Every mount is
# undone on exit, whatever happened (trap); and all of it happens in a
# private mount namespace of its own, so that even a kill -9 leaves nothing
# mounted on the host.
#
# Usage: chroot_run.sh ROOT [--bind HOST_DIR:INNER_DIR]... [--env NAME=VALUE]...
#                      -- COMMAND [ARG]...
set -euo pipefail

if [[ "${FAVOR_CHROOT_NAMESPACE:-}" != inside ]]; then
  ((EUID == 0)) || { echo "chroot_run: needs root" >&2; exit 1; }
  exec unshare --mount --propagation private -- \
    env FAVOR_CHROOT_NAMESPACE=inside bash "$0" "$@"
fi

root=$(realpath "${1:?usage: chroot_run.sh ROOT ... -- COMMAND}")
shift
binds=()
# LANG as the Dockerfiles' build stages set it: ccache hashes the locale, and
# the images' builds take their objects from this ccache (container_test.py).
envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
while (($# > 0)) && [[ "$1" != "--" ]]; do
  case "$1" in
    --bind) binds+=("$2"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    *) echo "chroot_run: unknown argument $1" >&2; exit 2 ;;
  esac
done
shift  # --

mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount --recursive "${mounted[i]}" || umount --lazy "${mounted[i]}" || true
  done
}
trap unmount_all EXIT

mount_at() {  # mount_at <bind|rbind> HOST_PATH INNER_PATH
  mkdir -p "$root$3"
  mount "--$1" "$2" "$root$3"
  mounted+=("$root$3")
}

mount_at bind /proc /proc
mount_at rbind /dev /dev
mount_at rbind /sys /sys
for bind in "${binds[@]}"; do
  mount_at bind "${bind%%:*}" "${bind#*:}"
done

# rm first: a symbolic link in the root must not lead the copy onto the host.
rm -f "$root/etc/resolv.conf" "$root/etc/favor-host-ca.crt"
cp --dereference /etc/resolv.conf "$root/etc/resolv.conf"
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/favor-host-ca.crt"
  envs+=(NODE_EXTRA_CA_CERTS=/etc/favor-host-ca.crt)
fi
for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [[ -n "${!name:-}" ]] && envs+=("$name=${!name}")
done

# Not exec: the trap must run after the command.
chroot "$root" /usr/bin/env -i "${envs[@]}" "$@"
