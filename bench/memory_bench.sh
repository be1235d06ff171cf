#!/usr/bin/env bash
# Memory saving against its targets (issue 16), one JSON line per case (../shared/BENCH.md):
#
# - activation recompute, full and selective: train_bench's lines (gpt-small, B4 x T256 on the
#   cpu; each step timed alternately with no recompute in the same process): activations_ratio
#   (targets <= 0.5 full, <= 0.7 selective) and ratio, the throughput against none (step time
#   = 1 / ratio: targets <= 1.35 and <= 1.07);
# - ZeRO stages 1, 2 and 3: `dlf train` on DEVICES simulated devices, one step; a rank's
#   parameters, gradients and optimizer state after the step (the most over the ranks) against
#   the ZeRO paper's closed form in fp32 — parameters 4Ψ, gradients 4Ψ, AdamW's moments 8Ψ,
#   stage 1 dividing the optimizer state by N, stage 3 the parameters too; stages 2 and 3 leave
#   no gradients (their 4Ψ/N part, consumed by the update, is released): value = measured
#   bytes, baseline = the closed form, ratio (target within 1 +- 0.05). The ranks are threads of this process and hold real data, so a stage whose N
#   replicas do not fit this host's memory is skipped with a message (gpt-medium's ZeRO-1 on 8
#   needs about 25 GiB); run it with a smaller model.
#
#   bash bench/memory_bench.sh [MODEL] [DEVICES] [ARGS...]   (default gpt-medium 8)
#
# ARGS go to every dlf train run (default: --batch DEVICES --seq 64, one short sequence a rank).
# Env: DLF_BUILD (build/release), RECOMPUTE_MODEL (gpt-small; "none" skips those lines).
set -euo pipefail
model=${1:-gpt-medium}
devices=${2:-8}
shift $(($# < 2 ? $# : 2))
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--batch "$devices" --seq 64)  # model states do not depend on them
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DLF_BUILD:-$root/build/release}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

recompute_model=${RECOMPUTE_MODEL:-gpt-small}
if [ "$recompute_model" != none ]; then
  for what in full selective; do
    "$build/bench/train_bench" "$recompute_model" --batch 4 --seq 256 --steps 4 --warmup 1 \
      --recompute "$what"
  done
fi

metric() { grep "\"$2\"" "$1" | tail -1 | sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p"; }
for zero in 1 2 3; do
  if ! "$build/apps/dlf" train --model "$model" --devices "$devices" --dp "$devices" --steps 1 \
    --device sim --zero "$zero" "${args[@]}" --metrics "$tmp/zero$zero.jsonl" >/dev/null \
    2>"$tmp/log"; then
    echo "memory_bench: $model --zero $zero on $devices devices skipped: $(tail -1 "$tmp/log")" >&2
    continue
  fi
  f=$tmp/zero$zero.jsonl
  python3 - "$model" "$devices" "$zero" "$(metric "$f" parameters)" \
    "$(metric "$f" sim_after_step_parameters_bytes)" "$(metric "$f" sim_after_step_gradients_bytes)" \
    "$(metric "$f" sim_after_step_optimizer_state_bytes)" <<'EOF'
import json, sys
model, n, zero = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
psi, params, grads, state = map(float, sys.argv[4:])
want = {"parameters": 4 * psi / (n if zero >= 3 else 1),
        "gradients": 0 if zero >= 2 else 4 * psi,
        "optimizer_state": 8 * psi / n}
got = {"parameters": params, "gradients": grads, "optimizer_state": state}
line = {"bench": "memory", "case": f"{model} zero {zero} on {n} sim devices, model states",
        "impl": "dlf", "threads": 2, "metric": "bytes_per_device_after_step",
        "value": sum(got.values()), "unit": "B", "baseline_impl": "ZeRO paper closed form (fp32)",
        "baseline": sum(want.values()), "ratio": sum(got.values()) / sum(want.values()),
        "parameters": int(psi)}
for k in want:
    if want[k] > 0:
        line[k + "_ratio"] = got[k] / want[k]
    else:
        line[k + "_bytes"] = got[k]
print(json.dumps(line))
EOF
done
