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
# With DRIFT set, a round whose host drifted — a calibration right after its profile finds the
# matmul peak or the memory bandwidth moved by more than DRIFT (0.10: a tenth) — is left out
# (and said so on stderr): the spec priced a machine other than the one the profile measured.
# `rounds` counts those kept, `dropped_rounds` those left out. (On 2026-11-27's EPYC host,
# DRIFT=0.10 left out 8 rounds of 9: its bandwidth moved 22.7 -> 30.0 GB/s and its matmul peak
# 164 -> 204 GFLOP/s within a round's half minute.)
#
#   bash bench/fidelity_bench.sh [MODEL...]   (default gpt-mini vit-tiny unet-small)
#
# Env: DLF_BUILD (build/release), THREADS (2), STEPS (5; the first is skipped as warm-up),
# ROUNDS (3), DRIFT (unset: every round kept, no second calibration).
set -euo pipefail
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(gpt-mini vit-tiny unet-small)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dlf=${DLF_BUILD:-$root/build/release}/apps/dlf
threads=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/rows" "$tmp/dropped"

# Nothing when the two specs' matmul peak (f32) and memory bandwidth agree within DRIFT, else
# what moved.
drift() {
  python3 - "$1" "$2" "$DRIFT" <<'EOF'
import json, sys
before, after = (json.load(open(f))["device"] for f in sys.argv[1:3])
moved = [f"{key} {before[key] / 1e9:.1f} -> {after[key] / 1e9:.1f} {unit}"
         for key, unit in (("peak_flops_f32", "GFLOP/s"), ("memory_bandwidth", "GB/s"))
         if abs(after[key] / before[key] - 1) > float(sys.argv[3])]
print("; ".join(moved))
EOF
}

for round in $(seq "${ROUNDS:-3}"); do
  for model in "${models[@]}"; do
    flock /tmp/bench.lock "$dlf" --threads "$threads" calibrate --out "$tmp/cpu.json" 2>/dev/null
    flock /tmp/bench.lock "$dlf" --threads "$threads" profile --model "$model" \
      --steps "${STEPS:-5}" --compare "sim:$tmp/cpu.json" >"$tmp/out" 2>"$tmp/log" ||
      { echo "fidelity_bench: $model failed: $(tail -1 "$tmp/log")" >&2; continue; }
    if [ -n "${DRIFT:-}" ]; then
      flock /tmp/bench.lock "$dlf" --threads "$threads" calibrate --out "$tmp/after.json" \
        2>/dev/null
      moved=$(drift "$tmp/cpu.json" "$tmp/after.json")
    else
      moved=""
    fi
    if [ -n "$moved" ]; then
      echo "fidelity_bench: round $round of $model left out, the host drifted: $moved" >&2
      echo "$model" >>"$tmp/dropped"
      continue
    fi
    # The comparison's rows "<class> [calls] <measured ms> <predicted ms> <error>%", each
    # class's ops (indented beneath it) left out; "in ops" and "step" have no calls.
    sed -n '/^predicted by sim:/,$p' "$tmp/out" | tail -n +3 | { grep -v '^  ' || true; } |
      awk -v model="$model" '
        $1 == "in" { print model "\tin ops\t" $3 "\t" $4; next }
        $1 == "step" { print model "\tstep\t" $2 "\t" $3; next }
        { print model "\t" $1 "\t" $3 "\t" $4 }' >>"$tmp/rows"
  done
done

python3 - "$tmp/rows" "$threads" "$tmp/dropped" <<'EOF'
import json, statistics, sys
rows, threads = sys.argv[1], int(sys.argv[2])
dropped = [line.strip() for line in open(sys.argv[3])]
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
        "rounds": len(runs), "dropped_rounds": dropped.count(model)}))
EOF
