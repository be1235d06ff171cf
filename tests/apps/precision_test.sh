#!/usr/bin/env bash
# --precision bf16 (mixed precision under dlf::AutocastGuard): gpt-nano learns the fortunes as
# well as in fp32 (on a CPU without fast bf16 it computes in fp32 and says so first), a run
# resumes bit for bit from its f32 master weights, recompute gives the same losses, every layout
# trains, --grad-reduce bf16 halves the gradients' bytes, and a simulated device's memory agrees
# with `dlf plan --precision bf16`.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

# 300 steps on the default text: the validation loss within 2 % of fp32's
for p in fp32 bf16; do
  "$dlf" train --model gpt-nano --steps 300 --precision $p --metrics "$tmp/$p.jsonl" 2>"$tmp/$p.log" ||
    fail "train --precision $p: $(cat "$tmp/$p.log")"
done
val() { sed -n 's/.*"val_loss":\([^,}]*\).*/\1/p' "$1" | tail -1; }
fp32=$(val "$tmp/fp32.jsonl") bf16=$(val "$tmp/bf16.jsonl")
awk -v a="$fp32" -v b="$bf16" 'BEGIN { d = (b - a) / a; if (d < 0) d = -d; exit !(d <= 0.02) }' ||
  fail "bf16's validation loss $bf16 is not within 2 % of fp32's $fp32"
# (on a CPU without fast bf16 the run computes in fp32: see below)
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  [ "$(losses "$tmp/fp32.jsonl" | head -1)" != "$(losses "$tmp/bf16.jsonl" | head -1)" ] ||
    fail "bf16's first loss is fp32's to the last bit: autocast did not run"
  ! grep -q "no fast bf16" "$tmp/bf16.log" || fail "this CPU has bf16 dot products: $(head -1 "$tmp/bf16.log")"
fi

# oneDNN held to instruction sets without bf16 dot products (a CPU without AVX-512 runs AVX2
# under both): bf16 computes in fp32, the same losses to the last bit, and the run's first line
# says so
for isa in AVX2 AVX512_CORE; do
  ONEDNN_MAX_CPU_ISA=$isa train --steps 2 --precision bf16 --metrics "$tmp/slow.jsonl" \
    2>"$tmp/log" || fail "bf16 under $isa: $(cat "$tmp/log")"
  head -1 "$tmp/log" | grep -Eq "^this host has no fast bf16 \(oneDNN ISA: (avx2|avx512_core)\): --precision bf16 computes in fp32" ||
    fail "the first line under $isa: $(head -1 "$tmp/log")"
  ONEDNN_MAX_CPU_ISA=$isa train --steps 2 --metrics "$tmp/slow32.jsonl" 2>/dev/null ||
    fail "fp32 under $isa"
  [ "$(losses "$tmp/slow.jsonl")" = "$(losses "$tmp/slow32.jsonl")" ] ||
    fail "bf16 under $isa: losses $(losses "$tmp/slow.jsonl" | tr '\n' ' '), fp32's $(losses "$tmp/slow32.jsonl" | tr '\n' ' ')"
done

# checkpoint and resume: the same losses bit for bit
train --steps 4 --precision bf16 --checkpoint "$tmp/straight" --metrics "$tmp/straight.jsonl" \
  2>"$tmp/log" || fail "train: $(cat "$tmp/log")"
train --steps 4 --until 2 --precision bf16 --checkpoint "$tmp/stopped" \
  --metrics "$tmp/resumed.jsonl" 2>/dev/null || fail "train --until"
"$dlf" --threads 1 train --model gpt-nano --checkpoint "$tmp/stopped" --resume --precision bf16 \
  --metrics "$tmp/resumed.jsonl" 2>"$tmp/log" || fail "resume: $(cat "$tmp/log")"
[ "$(losses "$tmp/straight.jsonl")" = "$(losses "$tmp/resumed.jsonl")" ] ||
  fail "resumed losses differ: $(losses "$tmp/straight.jsonl" | tr '\n' ' ') vs $(losses "$tmp/resumed.jsonl" | tr '\n' ' ')"
# the checkpoint holds the f32 master weights: fp32 evaluates it
"$dlf" eval --checkpoint "$tmp/straight" >/dev/null 2>"$tmp/log" || fail "eval: $(cat "$tmp/log")"
# recompute runs again in bf16: the same losses
train --steps 4 --precision bf16 --recompute full --metrics "$tmp/recompute.jsonl" 2>/dev/null ||
  fail "--recompute full --precision bf16"
[ "$(losses "$tmp/straight.jsonl")" = "$(losses "$tmp/recompute.jsonl")" ] ||
  fail "recompute changed the bf16 losses: $(losses "$tmp/recompute.jsonl" | tr '\n' ' ')"
expect_error 2 train --model gpt-nano --precision fp16

# every layout trains in bf16: its losses within 1 % of one device's (the order of the sums
# differs, and bf16 rounds it); a pipeline's micro-batches share each weight's one bf16 copy
for layout in "--dp 2" "--tp 2" "--pp 2" "--dp 2 --zero 3"; do
  # shellcheck disable=SC2086
  train --steps 3 --precision bf16 --devices 2 $layout --device cpu \
    --metrics "$tmp/layout.jsonl" 2>"$tmp/log" || fail "bf16 $layout: $(cat "$tmp/log")"
  paste <(losses "$tmp/straight.jsonl" | head -3) <(losses "$tmp/layout.jsonl") |
    awk '{ d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > 0.01) exit 1 }' ||
    fail "bf16 $layout: losses $(losses "$tmp/layout.jsonl" | tr '\n' ' ') against one device's"
done

# --grad-reduce bf16: the gradient average crosses the wire in bf16 (DDP's buckets, ZeRO-2's
# reduce-scatter, FSDP's): the same losses to 1 %, and on simulated devices half the time
for layout in "" "--zero 2" "--zero 3"; do
  # shellcheck disable=SC2086
  train --steps 3 --devices 2 --device cpu $layout --grad-reduce bf16 \
    --metrics "$tmp/reduce.jsonl" 2>"$tmp/log" || fail "--grad-reduce bf16 $layout: $(cat "$tmp/log")"
  train --steps 3 --devices 2 --device cpu $layout --metrics "$tmp/reduce32.jsonl" 2>/dev/null ||
    fail "dp 2 $layout"
  paste <(losses "$tmp/reduce32.jsonl") <(losses "$tmp/reduce.jsonl") |
    awk '{ d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > 0.01) exit 1 }' ||
    fail "--grad-reduce bf16 $layout: losses $(losses "$tmp/reduce.jsonl" | tr '\n' ' ')"
done
allreduce_ms() { sed -n 's/.*"sim_dp_comm_ms":\([^,}]*\).*/\1/p' "$1" | tail -1; }
for g in fp32 bf16; do  # gpt-mini: gradients big enough for bandwidth to rule the time
  "$dlf" --threads 1 train --model gpt-mini --batch 2 --seq 32 --steps 1 --devices 2 --dp 2 \
    --device sim --grad-reduce $g --metrics "$tmp/sim-$g.jsonl" 2>/dev/null ||
    fail "--grad-reduce $g on sim"
done
awk -v a="$(allreduce_ms "$tmp/sim-fp32.jsonl")" -v b="$(allreduce_ms "$tmp/sim-bf16.jsonl")" \
  'BEGIN { exit !(b < 0.6 * a) }' ||
  fail "bf16 allreduce $(allreduce_ms "$tmp/sim-bf16.jsonl") ms, fp32 $(allreduce_ms "$tmp/sim-fp32.jsonl") ms"
expect_error 2 train --model gpt-nano --grad-reduce f16

# a simulated A100's peak memory in training and in the plan, within 10 % of each other
"$dlf" train --model gpt-nano --steps 2 --precision bf16 --device sim:a100-80gb \
  --metrics "$tmp/sim.jsonl" 2>"$tmp/log" || fail "train on sim: $(cat "$tmp/log")"
trained=$(sed -n 's/.*"sim_peak_bytes":\([^,}]*\).*/\1/p' "$tmp/sim.jsonl" | tail -1)
planned=$("$dlf" plan --model gpt-nano --devices 1 --precision bf16 --device sim:a100-80gb \
  --batch 8 --micro-batch 8 --json | sed -n 's/.*"peak_bytes":\([^,}]*\).*/\1/p')
awk -v a="$trained" -v b="$planned" 'BEGIN { d = (b - a) / a; if (d < 0) d = -d; exit !(d <= 0.1) }' ||
  fail "sim peak $trained bytes in training, $planned planned"
# ... and a bf16 run out of memory is told what fits in bf16: gpt-nano at batch 8 on a 4.5 MB
# device, with --recompute selective 3.89 MiB (a run's sim peak: 4077240 bytes; planned in f32,
# no flags would fit)
sim_spec small45 4500000 >"$tmp/small45.json"
"$dlf" --threads 1 train --model gpt-nano --batch 8 --steps 2 --precision bf16 \
  --device "sim:$tmp/small45.json" 2>"$tmp/log" && fail "bf16 gpt-nano should not fit 4.5 MB"
grep -q "planned to fit with --recompute selective (peak 3.89 MiB" "$tmp/log" ||
  fail "a bf16 run's out-of-memory hint should plan bf16: $(tail -1 "$tmp/log")"
echo "ok"
