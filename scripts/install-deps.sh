#!/usr/bin/env bash
# Installs the Debian 12 packages kvsim needs, skipping what is already present.
# Idempotent: a second run with everything installed does nothing but check.
# Usage: install-deps.sh [--slurm]
# Catch2 v3 only exists in bookworm-backports. When it is missing, this script adds a
# backports source built from the machine's own Debian source entry (its URIs line), so the
# repository never names a package host itself.
set -euo pipefail

packages=(
  cmake g++ ninja-build pkg-config ccache make
  libboost-graph-dev libeigen3-dev libcatch2-dev
  libimgui-dev libstb-dev libglfw3-dev libgl-dev
  libyaml-cpp-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libbenchmark-dev libxxhash-dev libssl-dev
  xvfb xauth libgl1-mesa-dri python3-matplotlib
  # The Python module (python/) and its tests and notebook (ctest: py_tests, notebook_*).
  pybind11-dev python3-pybind11 python3-dev python3-pandas python3-pytest
  python3-nbclient python3-nbconvert python3-nbformat python3-ipykernel
  # `pip install .` offline (pyproject.toml, setup.py; ctest: py_pip_install).
  python3-pip python3-setuptools python3-wheel python3-venv
)
# --slurm: also a one-node Slurm (munge, slurmctld, slurmd), for the `slurm` test label
# (tests/cli/slurm_test.sh starts and stops its own daemons; nothing is enabled as a service).
if [ "${1:-}" = "--slurm" ]; then
  packages+=(munge slurmctld slurmd slurm-client)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
fi

backports_file=/etc/apt/sources.list.d/kvsim-bookworm-backports.sources
needs_backports=0
for p in "${missing[@]}"; do [ "$p" = libcatch2-dev ] && needs_backports=1; done

if [ $needs_backports -eq 1 ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  # Find the URIs line of the entry that serves the plain "bookworm" suite.
  uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk 'BEGIN{RS=""; FS="\n"}
      { u=""; s=0
        for (i=1;i<=NF;i++) {
          if ($i ~ /^URIs:/) u=$i
          if ($i ~ /^Suites:/ && $i ~ /(^|[ \t])bookworm([ \t]|$)/) s=1 }
        if (s && u!="") { print u; exit } }' "$f")
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    u=$(awk '$1=="deb" && $3=="bookworm" {print $2; exit}' /etc/apt/sources.list)
    [ -n "$u" ] && uri="URIs: $u"
  fi
  if [ -z "$uri" ]; then
    echo "install-deps: found no Debian 'bookworm' source entry to copy for bookworm-backports" >&2
    exit 1
  fi
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  printf 'Types: deb\n%s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
    "$uri" "$keyring" | $SUDO tee "$backports_file" >/dev/null
  echo "install-deps: added $backports_file"
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Name catch2 from backports explicitly: libcatch2-dev (v3) depends on catch2 and breaks the
# bookworm catch2 (v2), which apt would otherwise prefer (backports are pinned lower).
# Naming only this package keeps everything else on bookworm.
extra=()
if [ $needs_backports -eq 1 ]; then extra+=("catch2/bookworm-backports"); fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" "${extra[@]}"
echo "install-deps: done"
