#!/usr/bin/env bash
# Fuzzes a reader of untrusted files — the checkpoint reader (tests/fuzz/checkpoint_fuzz.cpp,
# the default) or the safetensors reader (safetensors_fuzz.cpp) — with libFuzzer under ASan and
# UBSan for SECONDS (default 300), starting from its seed corpus. Anything it finds is written
# to build/fuzz/crash-* (a reproducer: add it to tests/fuzz/READER_corpus once fixed).
#
#   bash scripts/fuzz.sh [SECONDS] [checkpoint|safetensors]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-300}
reader=${2:-checkpoint}
case "$reader" in checkpoint | safetensors) ;; *) echo "fuzz.sh: no reader '$reader'" >&2; exit 2 ;; esac
DLF_SETUP_EXTRA="clang-14 libclang-rt-14-dev libomp-14-dev" bash scripts/setup.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)" --target "${reader}_fuzz"
corpus=build/fuzz/${reader}_corpus
mkdir -p "$corpus"
cp -n "tests/fuzz/${reader}_corpus"/* "$corpus/"
cd build/fuzz
# HDF5 (Debian's 1.10, not instrumented) reads sizes from the file and asks malloc for them:
# in a normal process an impossible size fails (malloc returns null) and HDF5 reports an error,
# which dlf turns into its own; allocator_may_return_null and -malloc_limit_mb give the fuzzed
# process the same behaviour (a real allocation past -rss_limit_mb is still a finding). HDF5
# also leaks a few bytes on some error paths of malformed files, which dlf cannot free:
# -detect_leaks=0 (the test suite's ASan build checks dlf's own leaks).
export ASAN_OPTIONS=allocator_may_return_null=1:${ASAN_OPTIONS:-}
exec "./tests/${reader}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -malloc_limit_mb=1000000000 -detect_leaks=0 -print_final_stats=1 "${reader}_corpus"
