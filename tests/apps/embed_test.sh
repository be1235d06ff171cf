#!/usr/bin/env bash
# The installed tree works: install this build into a temporary prefix, run its bin/dlf, build
# the standalone example apps/examples/embed against it with find_package(dlf) (with this
# build's compiler flags, so sanitizer builds match), and run it (it fails unless its network
# learned XOR).
# Usage: embed_test.sh BUILD_DIR SOURCE_DIR CXX_FLAGS EXE_LINKER_FLAGS
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# The installed program runs from its prefix alone (its RPATH finds the installed library).
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/dlf" --threads 1 demo --steps 2 >/dev/null
cmake -S "$src/apps/examples/embed" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_CXX_FLAGS="$3" -DCMAKE_EXE_LINKER_FLAGS="$4" >/dev/null
cmake --build "$tmp/build" >/dev/null
"$tmp/build/embed_dlf"
