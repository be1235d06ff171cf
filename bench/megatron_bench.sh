#!/usr/bin/env bash
# The planner against published large-scale training (issue 19, item 5): every row of
# Megatron-LM's SC21 Table 1 (bench/data/megatron_sc21_table1.csv, sourced there) planned by
# `dlf plan` on one device spec for all rows — sim:a100-80gb, the preset, nothing tuned per row
# — with the row's model, layout, batch, micro-batch and schedule, bf16, full recompute.
# One JSON line a row (../shared/BENCH.md): value = predicted TFLOP/s per GPU counted by the
# paper's Eq. (3), baseline = the published figure, ratio = predicted / published; then one
# line with the rows' median ratio and the worst row's. The planner runs on meta devices: no
# lock is needed, nothing is timed on this machine.
#
#   bash bench/megatron_bench.sh [SPEC]   (default sim:a100-80gb)
#
# Env: DLF_BUILD (build/release).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dlf=${DLF_BUILD:-$root/build/release}/apps/dlf
spec=${1:-sim:a100-80gb}
seq=2048 vocab=51200
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -v '^#' "$root/bench/data/megatron_sc21_table1.csv" | tail -n +2 |
  while IFS=, read -r params heads hidden layers tp pp gpus batch micro chunks published; do
    schedule=1f1b
    [ "$chunks" -gt 1 ] && schedule=interleaved
    start=$(date +%s.%N)
    "$dlf" plan --layers "$layers" --hidden "$hidden" --heads "$heads" --vocab "$vocab" \
      --seq "$seq" --devices "$gpus" --tp "$tp" --pp "$pp" --batch "$batch" \
      --micro-batch "$micro" --schedule "$schedule" --virtual-stages "$chunks" \
      --precision bf16 --recompute full --device "$spec" --json >"$tmp/plan"
    end=$(date +%s.%N)
    awk -v params="$params" -v l="$layers" -v h="$hidden" -v s="$seq" -v V="$vocab" \
      -v B="$batch" -v n="$gpus" -v published="$published" -v tp="$tp" -v pp="$pp" \
      -v chunks="$chunks" -v start="$start" -v end="$end" '
      { match($0, /"value":[0-9.eE+-]+/); step = substr($0, RSTART + 8, RLENGTH - 8)
        match($0, /"fits":(true|false)/); fits = substr($0, RSTART + 7, RLENGTH - 7)
        flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
        predicted = flops / (step * n) / 1e12
        printf "{\"bench\":\"plan_validation\",\"case\":\"GPT %sB tp%d pp%d x%d on %d\",", params, tp, pp, chunks, n
        printf "\"impl\":\"sim\",\"threads\":1,\"metric\":\"tflops_per_gpu\",\"value\":%.1f,", predicted
        printf "\"unit\":\"TFLOP/s\",\"baseline_impl\":\"megatron-lm sc21 table 1\",\"baseline\":%s,", published
        printf "\"ratio\":%.3f,\"step_s\":%s,\"fits\":%s,\"plan_s\":%.2f}\n", predicted / published, step, fits, end - start }' \
      "$tmp/plan"
  done | tee "$tmp/lines"
grep -o '"ratio":[0-9.]*' "$tmp/lines" | cut -d: -f2 | sort -n |
  awk '{ r[NR] = $1 + 0 }
  END { median = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        worst = (1 / r[1] > r[NR]) ? r[1] : r[NR]
        printf "{\"bench\":\"plan_validation\",\"case\":\"all rows\",\"impl\":\"sim\",\"threads\":1,"
        printf "\"metric\":\"median_ratio\",\"value\":%.3f,\"unit\":\"ratio\",\"worst_ratio\":%.3f,", median, worst
        printf "\"rows\":%d}\n", NR }'
