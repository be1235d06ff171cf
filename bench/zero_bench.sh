#!/usr/bin/env bash
# ZeRO on simulated devices: `dlf train` with plain data parallelism and with --zero 1, 2 and 3
# on the same DEVICES sim devices (in-process ranks, the same global batch), the predicted
# step time and the bytes a rank sends per step, each against plain DP's. One JSON line per
# stage (../shared/BENCH.md): value = simulated ms per step, baseline = plain DP's, ratio =
# value / baseline (here lower is better: ZeRO's target is <= 1.10 for stage 3), and
# bytes_ratio (the ZeRO paper counts 1.5 for stage 3: each block gathered twice and its
# gradients reduce-scattered, against an allreduce's reduce-scatter + allgather). The figures
# are the last step's (the first lets ZeRO-3 learn the blocks' order for its prefetch); the
# simulated clock does not depend on this machine's load.
#
#   bash bench/zero_bench.sh [MODEL] [DEVICES] [STEPS] [ARGS...]   (default gpt-mini 8 3)
#
# ARGS go to every run (e.g. --device sim:l4-24gb --batch 16). Env: DLF_BUILD (build/release).
set -euo pipefail
model=${1:-gpt-mini}
devices=${2:-8}
steps=${3:-3}
shift $(($# < 3 ? $# : 3))
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dlf=${DLF_BUILD:-$root/build/release}/apps/dlf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

last() { grep '"sim_step_ms"' "$1" | tail -1 | sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p"; }
for zero in 0 1 2 3; do
  flags=()
  [ "$zero" -gt 0 ] && flags=(--zero "$zero")
  "$dlf" train --model "$model" --devices "$devices" --dp "$devices" --steps "$steps" \
    --device sim "${flags[@]}" "$@" --metrics "$tmp/zero$zero.jsonl" >/dev/null 2>"$tmp/log" ||
    { echo "zero_bench: --zero $zero failed: $(tail -1 "$tmp/log")" >&2; exit 1; }
done
for zero in 1 2 3; do
  python3 - "$model" "$devices" "$zero" \
    "$(last "$tmp/zero$zero.jsonl" sim_step_ms)" "$(last "$tmp/zero0.jsonl" sim_step_ms)" \
    "$(last "$tmp/zero$zero.jsonl" sim_comm_bytes)" "$(last "$tmp/zero0.jsonl" sim_comm_bytes)" \
    "$(last "$tmp/zero$zero.jsonl" sim_exposed_dp_comm_ms)" \
    "$(last "$tmp/zero$zero.jsonl" sim_peak_bytes)" "$(last "$tmp/zero0.jsonl" sim_peak_bytes)" <<'EOF'
import json, sys
model, devices, zero = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ms, base_ms, sent, base_sent, exposed, peak, base_peak = map(float, sys.argv[4:])
print(json.dumps({
    "bench": "zero", "case": f"{model} zero {zero} on {devices} sim devices", "impl": "sim",
    "threads": 2, "metric": "sim_step_ms", "value": ms, "unit": "ms",
    "baseline_impl": "plain data parallel", "baseline": base_ms, "ratio": ms / base_ms,
    "exposed_dp_comm_ms": exposed, "bytes_sent": sent, "baseline_bytes_sent": base_sent,
    "bytes_ratio": sent / base_sent, "peak_bytes": peak, "baseline_peak_bytes": base_peak,
    "peak_ratio": peak / base_peak}))
EOF
done
