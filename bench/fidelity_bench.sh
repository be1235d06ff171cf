#!/usr/bin/env bash
# Does a sim device made from this CPU predict a measured cpu run? (issue 19, item 4)
#
# Each round, for each model, `dlf calibrate` measures this machine into a spec, then `dlf profile
# --compare sim:SPEC` times rank 0's ops on the cpu and prices each as a sim device of that spec
# would. The host's speed drifts by a fifth or more from one minute to the next, so each profile
# runs right after a calibration of its own, and the figures are medians over the rounds. One
# JSON line per model and op class, and per step (../shared/BENCH.md): value = predicted ms a
# step, baseline = measured ms, ratio = the median of the rounds' predicted / measured (goal:
# within 1 +- 0.20 per op class, 1 +- 0.15 per step), min/max_ratio the rounds' extremes.
# Calibration and every profile run under `flock /tmp/bench.lock`, one after the other.
#
#   bash bench/fidelity_bench.sh [MODEL...]   (default gpt-mini vit-tiny unet-small)
#
# Env: DLF_BUILD (build/release), THREADS (2), STEPS (5; the first is skipped as warm-up),
# ROUNDS (3).
set -euo pipefail
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(gpt-mini vit-tiny unet-small)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dlf=${DLF_BUILD:-$root/build/release}/apps/dlf
threads=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/rows"

for round in $(seq "${ROUNDS:-3}"); do
  for model in "${models[@]}"; do
    flock /tmp/bench.lock "$dlf" --threads "$threads" calibrate --out "$tmp/cpu.json" 2>/dev/null
    flock /tmp/bench.lock "$dlf" --threads "$threads" profile --model "$model" \
      --steps "${STEPS:-5}" --compare "sim:$tmp/cpu.json" >"$tmp/out" 2>"$tmp/log" ||
      { echo "fidelity_bench: $model failed: $(tail -1 "$tmp/log")" >&2; continue; }
    # The comparison's rows "<class> [calls] <measured ms> <predicted ms> <error>%", each
    # class's ops (indented beneath it) left out; "in ops" and "step" have no calls.
    sed -n '/^predicted by sim:/,$p' "$tmp/out" | tail -n +3 | { grep -v '^  ' || true; } |
      awk -v model="$model" '
        $1 == "in" { print model "\tin ops\t" $3 "\t" $4; next }
        $1 == "step" { print model "\tstep\t" $2 "\t" $3; next }
        { print model "\t" $1 "\t" $3 "\t" $4 }' >>"$tmp/rows"
  done
done

python3 - "$tmp/rows" "$threads" <<'EOF'
import json, statistics, sys
rows, threads = sys.argv[1], int(sys.argv[2])
cases = {}
for line in open(rows):
    model, name, measured, predicted = line.rstrip("\n").split("\t")
    if float(measured) > 0:
        cases.setdefault((model, name), []).append((float(measured), float(predicted)))
for (model, name), runs in cases.items():
    ratios = [p / m for m, p in runs]
    print(json.dumps({
        "bench": "fidelity", "case": f"{model} {name}", "impl": "sim", "threads": threads,
        "metric": "predicted_ms_per_step",
        "value": round(statistics.median(p for _, p in runs), 3), "unit": "ms",
        "baseline_impl": "cpu (measured)",
        "baseline": round(statistics.median(m for m, _ in runs), 3),
        "ratio": round(statistics.median(ratios), 4),
        "min_ratio": round(min(ratios), 4), "max_ratio": round(max(ratios), 4),
        "rounds": len(runs)}))
EOF
