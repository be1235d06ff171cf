#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: under ASan + UBSan (all but
# the tests labelled release_only: tests/CMakeLists.txt says why), then the Release build's.
# Ends with ctest's summary line.
# The test presets set OMP_WAIT_POLICY=PASSIVE: ctest runs nproc tests at once, each with an
# OpenMP pool, and spinning idle workers then starve the running ones (the release suite took
# 120 s with spinning workers, 68 s without).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The tests also cross-check numbers with PyTorch (Debian's python3-torch, with numpy), render
# dlf train's HTML report in headless Chromium, and compare token ids with tiktoken's (npm).
DLF_SETUP_EXTRA="python3-torch python3-numpy chromium ${DLF_SETUP_EXTRA:-}" bash scripts/setup.sh
# The reference tokenizers (npm: tiktoken, gpt-3-encoder) that tests/tokenizers compare with.
bash scripts/reference_tokenizers.sh
jobs=$(nproc)
for preset in release asan; do
  echo "== $preset: configure and build" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"$jobs"
done
ctest --preset asan -j"$jobs"
ctest --preset release -j"$jobs"
