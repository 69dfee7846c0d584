#!/usr/bin/env bash
# Runs a README command in a brand-new minimal Debian 12 root, the way a new user's machine
# or a fresh CI runner sees the project: nothing installed but apt, git and certificates.
# It catches a package that is present here only by chance (a dependency of something else,
# a "Recommends" that --no-install-recommends skips, something installed by hand).
#
#   scripts/fresh_machine_check.sh                     # ./scripts/quickstart.sh
#   scripts/fresh_machine_check.sh ./scripts/test.sh   # any command, run at the clone's root
#   KEEP_ROOT=1 scripts/fresh_machine_check.sh ...     # keep the root afterwards to look inside
#
# Needs root (chroot, mounts) and Debian's mmdebstrap (installed when missing). The clone is
# of the committed HEAD: uncommitted changes are not seen, as in CI. The minimal root is
# built once and cached as a tarball (ROOT_CACHE, default /var/cache/fusebench-fresh-root);
# every call unpacks a new copy, so each check starts clean. ../shared, when present beside
# the project, is copied beside the clone (the ONNX conformance tests read it).
set -euo pipefail
project=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
command=${*:-./scripts/quickstart.sh}
cache=${ROOT_CACHE:-/var/cache/fusebench-fresh-root}
tarball=$cache/debian12-minimal.tar

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh_machine_check: must run as root (it uses chroot and mounts)" >&2
  exit 2
fi

mkdir -p "$cache"
if [ ! -f "$tarball" ]; then
  if ! command -v mmdebstrap >/dev/null; then
    apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  fi
  # The machine's own apt sources, so that the check sees the mirror the user would.
  sources=/etc/apt/sources.list.d/debian.sources
  [ -f "$sources" ] || sources=/etc/apt/sources.list
  echo "fresh_machine_check: building a minimal Debian 12 root (cached in $tarball)"
  # mmdebstrap picks the output format from the name's extension: keep ".tar" last.
  mmdebstrap --quiet --variant=apt --include=ca-certificates,git bookworm "$cache/partial.tar" "$sources"
  mv "$cache/partial.tar" "$tarball"
fi

root=$(mktemp -d -t fusebench-fresh.XXXXXX)
unmount_all() {
  for m in sys dev proc; do
    umount -R "$root/$m" 2>/dev/null || umount -l "$root/$m" 2>/dev/null || true
  done
  if grep -q " $root/" /proc/mounts; then
    echo "fresh_machine_check: $root still has mounts; left in place" >&2
  elif [ -n "${KEEP_ROOT:-}" ]; then
    echo "fresh_machine_check: root kept at $root"
  else
    rm -rf --one-file-system "$root"
  fi
}
trap unmount_all EXIT

tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/src"
git clone -q "$project" "$root/src/fusebench"
if [ -d "$project/../shared" ]; then cp -aL "$project/../shared" "$root/src/shared"; fi
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t sysfs sys "$root/sys"

echo "fresh_machine_check: '$command' at $(git -C "$project" rev-parse --short HEAD) in a new Debian 12 root"
start=$(date +%s)
set +e
chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c "cd /src/fusebench && $command"
code=$?
set -e
echo "fresh_machine_check: exit $code after $(( $(date +%s) - start )) s"
exit $code
