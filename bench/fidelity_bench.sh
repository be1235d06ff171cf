#!/usr/bin/env bash
# Does a sim device made from this CPU predict a measured cpu run? (issue 19, item 4)
#
# `dlf calibrate` measures this machine into a spec; then for each model `dlf profile --compare
# sim:SPEC` times rank 0's ops on the cpu and prices each as a sim device of that spec would.
# One JSON line per model and op class, and per step (../shared/BENCH.md): value = predicted
# ms a step, baseline = measured ms, ratio = predicted / measured (goal: within 1 +- 0.20 per
# op class, 1 +- 0.15 per step). Calibration and every profile run under `flock
# /tmp/bench.lock`, one after the other.
#
#   bash bench/fidelity_bench.sh [MODEL...]   (default gpt-mini vit-tiny unet-small)
#
# Env: DLF_BUILD (build/release), THREADS (2), STEPS (5; the first is skipped as warm-up).
set -euo pipefail
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(gpt-mini vit-tiny unet-small)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dlf=${DLF_BUILD:-$root/build/release}/apps/dlf
threads=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

flock /tmp/bench.lock "$dlf" --threads "$threads" calibrate --out "$tmp/cpu.json" 2>/dev/null
for model in "${models[@]}"; do
  flock /tmp/bench.lock "$dlf" --threads "$threads" profile --model "$model" \
    --steps "${STEPS:-5}" --compare "sim:$tmp/cpu.json" >"$tmp/out" 2>"$tmp/log" ||
    { echo "fidelity_bench: $model failed: $(tail -1 "$tmp/log")" >&2; continue; }
  # the comparison's rows: "<class> [calls] <measured ms> <predicted ms> <error>%"
  sed -n '/^predicted by sim:/,$p' "$tmp/out" | tail -n +3 |
    awk -v model="$model" -v threads="$threads" '
      { error = $NF; if ($1 == "step" || $1 == "in") { name = ($1 == "in") ? "in ops" : "step";
          measured = ($1 == "in") ? $3 : $2; predicted = ($1 == "in") ? $4 : $3 }
        else { name = $1; measured = $3; predicted = $4 }
        if (measured + 0 <= 0) next
        printf "{\"bench\":\"fidelity\",\"case\":\"%s %s\",\"impl\":\"sim\",\"threads\":%d,", model, name, threads
        printf "\"metric\":\"predicted_ms_per_step\",\"value\":%s,\"unit\":\"ms\",", predicted
        printf "\"baseline_impl\":\"cpu (measured)\",\"baseline\":%s,\"ratio\":%.4f}\n", measured, predicted / measured }'
done
