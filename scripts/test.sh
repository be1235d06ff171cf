#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the Release build, then
# the same suite under ASan + UBSan. Ends with ctest's summary line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
jobs=$(nproc)
for preset in release asan; do
  echo "== $preset: configure and build" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"$jobs"
done
ctest --preset asan -j"$jobs"
ctest --preset release -j"$jobs"
