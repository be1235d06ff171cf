#!/usr/bin/env bash
# Installs what is missing, builds dlf, and runs its main job: gpt-mini trained on the fortunes
# corpus for 300 steps (checkpoint in runs/gpt-mini), then a sample from it.
# With arguments, runs `dlf ARGS...` instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target dlf_cli >&2
dlf=./build/release/apps/dlf
[ $# -gt 0 ] && exec "$dlf" "$@"
"$dlf" train --model gpt-mini --steps 300 --eval-every 100 --checkpoint runs/gpt-mini \
  --metrics runs/gpt-mini/metrics.jsonl
"$dlf" generate --checkpoint runs/gpt-mini --prompt "The " --tokens 200
