#!/usr/bin/env bash
# Installs what dlf needs from Debian 12 packages, only what is missing.
# Works on a minimal Debian (debootstrap --variant=minbase) as root, or via sudo.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake make pkg-config git ca-certificates
  # libraries
  libdnnl-dev ocl-icd-opencl-dev libeigen3-dev libcereal-dev libcli11-dev
  libhdf5-dev zlib1g-dev libpng-dev doctest-dev
  # the tokenizers' pre-tokenisation regex (Unicode classes, JIT)
  libpcre2-dev
  # the benchmark history (dlf bench)
  libsqlite3-dev
  # MPI backend of the communicator (mpirun)
  libopenmpi-dev openmpi-bin
  # the API reference (the docs target, checked by the tests)
  doxygen
  # data: the default text corpus and Fashion-MNIST
  fortunes dataset-fashion-mnist
)
[ "${DLF_SETUP_EXTRA:-}" ] && read -r -a extra <<<"$DLF_SETUP_EXTRA" && packages+=("${extra[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
