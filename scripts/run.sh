#!/usr/bin/env bash
# Installs what is missing, builds dlf, and runs its main job. Extra arguments go to dlf.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target dlf_cli >&2
exec ./build/release/apps/dlf "${@:-demo}"
