#!/usr/bin/env bash
# Installs every Debian package fusebench needs to build, test and run. Idempotent: a
# package already installed is skipped, and `apt-get update` runs only when one is missing.
# `scripts/setup.sh sanitize` installs instead what only scripts/fuzz.sh and
# scripts/sanitize.sh need (clang and its sanitizer and libFuzzer runtimes).
set -euo pipefail
LIST="${1:-setup}"

# The packages, with why each is needed, are in scripts/debian_packages.txt: the lines
# marked with LIST (scripts/offline_deps.sh reads the same file for air-gapped nodes).
mapfile -t PACKAGES < <(sed 's/#.*//' "$(dirname "$0")/debian_packages.txt" | awk -v tag="$LIST" '{for (i = 2; i <= NF; i++) if ($i == tag) {print $1; break}}')
if [ ${#PACKAGES[@]} -eq 0 ]; then
  echo "setup: no package marked $LIST in scripts/debian_packages.txt" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
