#!/usr/bin/env bash
# The planner against published training runs (issue 50, item 4): every row of
# bench/data/published_runs.csv (Megatron-LM SC21 Tables 1 and 2, Korthikanti et al. 2022,
# Llama 3, AWS Neuron's Trn1 tables; sources in its columns) that `dlf plan` can plan as it was
# run — the model by its dimensions, the row's layout, ZeRO stage, recompute, global batch,
# micro-batch and sequence, bf16, on the sim preset of its device — and the rows it cannot,
# each with its reason. Nothing is tuned: the presets' figures come from datasheets and
# published kernel measurements (device/sim/sim_presets.cpp), not from these rows.
#
# The rows are split once, fixed: within each source, the planned rows in file order go
# alternately to the fit half and the test half, so a factor fitted later has its held-back
# rows already chosen. Stdout: one JSON line a planned row (../shared/BENCH.md; ratio =
# predicted / measured throughput, a time inverted), one per half (median and worst |error|,
# rows within 15 %), one for the layout ranking (pairs of rows of one model, machine and unit
# whose measured order the plan keeps). Stderr: the same as a table, and the rows not planned.
# Plans run on meta devices: no lock is needed, nothing is timed on this machine.
#
#   bash bench/validate_planner.sh [--rows N] [--csv FILE]
#
# Env: DLF_BUILD (build/release).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec python3 "$root/bench/validate_planner.py" --dlf "${DLF_BUILD:-$root/build/release}/apps/dlf" "$@"
