#!/usr/bin/env bash
# Fuzzes the checkpoint reader (tests/fuzz/checkpoint_fuzz.cpp) with libFuzzer under ASan and
# UBSan for SECONDS (default 300), starting from the seed corpus. Anything it finds is written
# to build/fuzz/crash-* (a reproducer: add it to tests/fuzz/checkpoint_corpus once fixed).
#
#   bash scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-300}
DLF_SETUP_EXTRA="clang-14 libclang-rt-14-dev libomp-14-dev" bash scripts/setup.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)" --target checkpoint_fuzz
corpus=build/fuzz/checkpoint_corpus
mkdir -p "$corpus"
cp -n tests/fuzz/checkpoint_corpus/* "$corpus/"
cd build/fuzz
# HDF5 (Debian's 1.10, not instrumented) reads sizes from the file and asks malloc for them:
# in a normal process an impossible size fails (malloc returns null) and HDF5 reports an error,
# which dlf turns into its own; allocator_may_return_null and -malloc_limit_mb give the fuzzed
# process the same behaviour (a real allocation past -rss_limit_mb is still a finding). HDF5
# also leaks a few bytes on some error paths of malformed files, which dlf cannot free:
# -detect_leaks=0 (the test suite's ASan build checks dlf's own leaks).
export ASAN_OPTIONS=allocator_may_return_null=1:${ASAN_OPTIONS:-}
exec ./tests/checkpoint_fuzz -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -malloc_limit_mb=1000000000 -detect_leaks=0 -print_final_stats=1 checkpoint_corpus
