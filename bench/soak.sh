#!/usr/bin/env bash
# Soak: long runs under load, each checked for a hang (a time limit), drift between replicas
# (`--check-replicas`: a parameter checksum compared across the data-parallel ranks) and a leak
# (resident memory sampled every second: its growth from the end of warm-up to the end).
# One JSON line per run (../shared/BENCH.md, "bench":"soak").
#
#   bash bench/soak.sh [IN_PROCESS_STEPS] [MPI_STEPS]     # defaults 1000 and 300
#
# Env: DLF_BUILD (default build/release). Not a test: it takes minutes and never fails the suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dlf=${DLF_BUILD:-$root/build/release}/apps/dlf
steps=${1:-1000}
mpi_steps=${2:-300}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# soak NAME STEPS LIMIT_S CMD...: runs CMD (whose metrics go to $tmp/NAME.jsonl), sampling the
# resident memory of every process it starts; prints the JSON line.
soak() {
  local name=$1 steps=$2 limit=$3; shift 3
  local start end code=0 samples="$tmp/$name.rss"
  start=$(date +%s.%N)
  timeout "$limit" "$@" 2>"$tmp/$name.log" &
  local job=$!
  : >"$samples"
  while kill -0 "$job" 2>/dev/null; do
    # The job's processes: timeout, dlf (or mpirun and its dlf ranks).
    local rss=0
    for p in $(pgrep -f -- "--metrics $tmp/$name.jsonl"); do
      rss=$((rss + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
    done
    local lines=0
    [ -f "$tmp/$name.jsonl" ] && lines=$(wc -l <"$tmp/$name.jsonl")
    echo "$lines $rss" >>"$samples"
    sleep 1
  done
  wait "$job" || code=$?
  end=$(date +%s.%N)
  local done_steps warm peak last
  done_steps=$(grep -c '"loss"' "$tmp/$name.jsonl" 2>/dev/null || echo 0)
  # Memory after warm-up (a fifth of the steps) and at the end, in MiB.
  warm=$(awk -v w=$((steps / 5)) '$1 >= w && $2 > 0 {print $2; exit}' "$samples")
  last=$(awk '$2 > 0 {v = $2} END {print v}' "$samples")
  peak=$(awk '$2 > m {m = $2} END {print m}' "$samples")
  local drift=false hang=false
  grep -q "replicas' parameters differ" "$tmp/$name.log" && drift=true
  [ "$code" -eq 124 ] && hang=true
  awk -v name="$name" -v steps="$steps" -v done="$done_steps" -v code="$code" \
    -v seconds="$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')" -v warm="${warm:-0}" \
    -v last="${last:-0}" -v peak="${peak:-0}" -v drift="$drift" -v hang="$hang" 'BEGIN {
      printf "{\"bench\":\"soak\",\"case\":\"%s\",\"impl\":\"dlf\",\"threads\":2,", name
      printf "\"metric\":\"rss_growth_after_warmup\",\"value\":%.1f,\"unit\":\"MiB\",", (last - warm) / 1024
      printf "\"steps\":%d,\"steps_done\":%d,\"exit_code\":%d,\"seconds\":%.1f,", steps, done, code, seconds
      printf "\"rss_warm_mib\":%.1f,\"rss_end_mib\":%.1f,\"peak_rss_mib\":%.1f,", warm / 1024, last / 1024, peak / 1024
      printf "\"replica_drift\":%s,\"hang\":%s}\n", drift, hang
    }'
  [ "$code" -eq 0 ] || tail -3 "$tmp/$name.log" >&2
}

soak in-process-dp8-gpt-nano "$steps" 3600 \
  "$dlf" --threads 2 train --model gpt-nano --steps "$steps" --dp 8 --device cpu --batch 16 \
  --check-replicas 50 --checkpoint "$tmp/inproc" --save-every 250 \
  --metrics "$tmp/in-process-dp8-gpt-nano.jsonl"
if command -v mpirun >/dev/null; then
  soak mpi-4-processes-gpt-nano "$mpi_steps" 3600 \
    mpirun --allow-run-as-root --oversubscribe -np 4 "$dlf" --threads 2 train --model gpt-nano \
    --steps "$mpi_steps" --dp 4 --batch 16 --check-replicas 50 --checkpoint "$tmp/mpi" \
    --save-every 100 --metrics "$tmp/mpi-4-processes-gpt-nano.jsonl"
fi
