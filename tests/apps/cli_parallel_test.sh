#!/usr/bin/env bash
# The dlf command line over several devices: data parallelism, ZeRO 1-3, sim devices, traces, memory limits.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

# one device's losses, the reference of the runs below
train --steps 3 --metrics "$tmp/dp1.jsonl" 2>/dev/null || fail "train on one device"
train --steps 3 --devices 2 --device cpu --metrics "$tmp/dp2.jsonl" 2>"$tmp/log" ||
  fail "train --devices 2: $(cat "$tmp/log")"
grep -q "over 2 ranks" "$tmp/log" || fail "no rank count: $(cat "$tmp/log")"
same_losses "$tmp/dp1.jsonl" "$tmp/dp2.jsonl" || fail "dp=2 losses differ from one device's"
train --steps 3 --devices 2 --device cpu --zero --metrics "$tmp/zero.jsonl" 2>"$tmp/log" ||
  fail "train --zero: $(cat "$tmp/log")"
same_losses "$tmp/dp1.jsonl" "$tmp/zero.jsonl" || fail "dp=2 with ZeRO-1 losses differ from one device's"
# ZeRO-1 checkpoints hold the whole optimizer state: stopping and resuming repeats the run
train --steps 4 --devices 2 --device cpu --zero --checkpoint "$tmp/z-straight" \
  --metrics "$tmp/z-straight.jsonl" 2>/dev/null || fail "train --zero --checkpoint"
train --steps 4 --until 2 --devices 2 --device cpu --zero --checkpoint "$tmp/z-stopped" \
  --metrics "$tmp/z-resumed.jsonl" 2>/dev/null || fail "train --zero --until"
"$dlf" --threads 1 train --model gpt-nano --devices 2 --device cpu --zero --checkpoint "$tmp/z-stopped" \
  --resume --metrics "$tmp/z-resumed.jsonl" 2>"$tmp/log" || fail "resume --zero: $(cat "$tmp/log")"
[ "$(losses "$tmp/z-straight.jsonl")" = "$(losses "$tmp/z-resumed.jsonl")" ] ||
  fail "ZeRO-1 resumed losses differ: $(losses "$tmp/z-straight.jsonl" | tr '\n' ' ') vs $(losses "$tmp/z-resumed.jsonl" | tr '\n' ' ')"
"$dlf" eval --checkpoint "$tmp/z-straight" --batches 1 | grep -q "validation loss" || fail "eval of a ZeRO-1 checkpoint"
# ZeRO-2: gradients sharded too; its checkpoint resumes on one device without ZeRO
train --steps 4 --devices 2 --device cpu --zero 2 --checkpoint "$tmp/z2" --metrics "$tmp/z2.jsonl" \
  2>"$tmp/log" || fail "train --zero 2: $(cat "$tmp/log")"
same_losses "$tmp/z-straight.jsonl" "$tmp/z2.jsonl" || fail "ZeRO-2 losses differ from ZeRO-1's"
train --steps 4 --until 2 --devices 2 --device cpu --zero 2 --checkpoint "$tmp/z2-stopped" \
  --metrics "$tmp/z2-resumed.jsonl" 2>/dev/null || fail "train --zero 2 --until"
"$dlf" --threads 1 train --checkpoint "$tmp/z2-stopped" --resume --metrics "$tmp/z2-resumed.jsonl" \
  2>"$tmp/log" || fail "resume a ZeRO-2 run on one device: $(cat "$tmp/log")"
same_losses "$tmp/z2.jsonl" "$tmp/z2-resumed.jsonl" || fail "ZeRO-2 resumed on one device differs"
# ZeRO-3 (FSDP), with recompute: the parameters sharded too; its checkpoint resumes on one device
train --steps 4 --devices 2 --device cpu --zero 3 --recompute full --checkpoint "$tmp/z3" \
  --metrics "$tmp/z3.jsonl" 2>"$tmp/log" || fail "train --zero 3: $(cat "$tmp/log")"
same_losses "$tmp/z-straight.jsonl" "$tmp/z3.jsonl" || fail "ZeRO-3 losses differ from ZeRO-1's"
train --steps 4 --until 2 --devices 2 --device cpu --zero 3 --checkpoint "$tmp/z3-stopped" \
  --metrics "$tmp/z3-resumed.jsonl" 2>/dev/null || fail "train --zero 3 --until"
cp -r "$tmp/z3-stopped" "$tmp/z3-stopped2"
cp "$tmp/z3-resumed.jsonl" "$tmp/z3-resumed2.jsonl"
"$dlf" --threads 1 train --checkpoint "$tmp/z3-stopped" --resume --metrics "$tmp/z3-resumed.jsonl" \
  2>"$tmp/log" || fail "resume a ZeRO-3 run on one device: $(cat "$tmp/log")"
same_losses "$tmp/z3.jsonl" "$tmp/z3-resumed.jsonl" || fail "ZeRO-3 resumed on one device differs"
"$dlf" --threads 1 train --checkpoint "$tmp/z3-stopped2" --resume --devices 2 --device cpu --zero 3 \
  --metrics "$tmp/z3-resumed2.jsonl" 2>"$tmp/log" || fail "resume a ZeRO-3 run under ZeRO-3: $(cat "$tmp/log")"
same_losses "$tmp/z3.jsonl" "$tmp/z3-resumed2.jsonl" || fail "ZeRO-3 resumed under ZeRO-3 differs"
# Memory by category after a step on 4 sim devices against the ZeRO paper's closed form in
# fp32 (parameters 4Ψ, gradients 4Ψ, AdamW's two moments 8Ψ; stage 1 divides the optimizer
# state by N, stage 3 the parameters too), within 5 %; Ψ from plain DP. Stages 2 and 3 keep
# no gradients after the step: the update consumed this rank's part (4Ψ/N during the step),
# and it is released rather than kept through the next forward.
after() { sed -n "s/.*\"sim_after_step_$2_bytes\":\([0-9]*\).*/\1/p" "$1"; }
for zero in 0 1 2 3; do
  flags=(); [ "$zero" -gt 0 ] && flags=(--zero "$zero")
  train --steps 1 --devices 4 --dp 4 --device sim "${flags[@]}" --metrics "$tmp/mem$zero.jsonl" \
    2>"$tmp/log" || fail "train --zero $zero on 4 sim devices: $(cat "$tmp/log")"
  grep -q "memory per device (the most over the ranks): at the last step's peak parameters" \
    "$tmp/log" || fail "no memory report by category: $(cat "$tmp/log")"
  psi=$(($(after "$tmp/mem0.jsonl" parameters) / 4))
  awk -v z="$zero" -v psi="$psi" -v p="$(after "$tmp/mem$zero.jsonl" parameters)" \
    -v g="$(after "$tmp/mem$zero.jsonl" gradients)" -v o="$(after "$tmp/mem$zero.jsonl" optimizer_state)" '
    function near(got, want) { return got >= 0.95 * want && got <= 1.05 * want }
    BEGIN { n = 4; wp = 4 * psi / (z >= 3 ? n : 1); wg = z >= 2 ? 0 : 4 * psi
            wo = 8 * psi / (z >= 1 ? n : 1)
            exit !(psi > 0 && near(p, wp) && near(g, wg) && near(o, wo)) }' ||
    fail "--zero $zero: parameters, gradients, optimizer state $(after "$tmp/mem$zero.jsonl" parameters)" \
      "$(after "$tmp/mem$zero.jsonl" gradients) $(after "$tmp/mem$zero.jsonl" optimizer_state) bytes" \
      "after a step; closed form for Ψ = $psi"
done
# ZeRO-Offload on sim devices: the same losses as without it; after a step no optimizer state on
# the devices (--offload optimizer under ZeRO-2) and no parameters either (--offload params,
# ZeRO-3's shards in host memory, uploaded for each gather); the copies on each device's host
# stream in the trace, downloads and uploads.
for offload in "2 optimizer optimizer_state host" "3 params parameters device"; do
  read -r zero what left copy <<<"$offload"
  train --steps 2 --devices 2 --dp 2 --device sim --zero "$zero" --metrics "$tmp/z${zero}sim.jsonl" \
    2>"$tmp/log" || fail "train --zero $zero on sim: $(cat "$tmp/log")"
  train --steps 2 --devices 2 --dp 2 --device sim --zero "$zero" --offload "$what" \
    --metrics "$tmp/offload-$what.jsonl" --trace "$tmp/offload-$what.json" 2>"$tmp/log" ||
    fail "train --offload $what: $(cat "$tmp/log")"
  same_losses "$tmp/z${zero}sim.jsonl" "$tmp/offload-$what.jsonl" || fail "--offload $what changed the losses"
  [ "$(after "$tmp/offload-$what.jsonl" "$left")" = 0 ] &&
    [ "$(after "$tmp/offload-$what.jsonl" optimizer_state)" = 0 ] &&
    [ "$(after "$tmp/z${zero}sim.jsonl" "$left")" -gt 0 ] ||
    fail "--offload $what left $left on the device: $(tail -2 "$tmp/offload-$what.jsonl")"
  grep -q '"args":{"name":"host"}' "$tmp/offload-$what.json" || fail "the trace has no host stream"
  grep -q '"name":"copy \[[0-9, ]*\] to '"$copy"'"' "$tmp/offload-$what.json" ||
    fail "--offload $what: no copy to $copy in the trace"
done
# ... and under pipeline stages: the tied embedding's gradient, summed over the pipeline's two
# ends on the device, goes down to its shard's host memory (it stayed, and clipping failed)
train --steps 2 --dp 2 --pp 2 --device sim --zero 3 --metrics "$tmp/pp-z3.jsonl" 2>/dev/null ||
  fail "dp 2 x pp 2 --zero 3 on sim"
train --steps 2 --dp 2 --pp 2 --device sim --zero 3 --offload params --metrics "$tmp/pp-z3-off.jsonl" \
  2>"$tmp/log" || fail "dp 2 x pp 2 --zero 3 --offload params: $(cat "$tmp/log")"
same_losses "$tmp/pp-z3.jsonl" "$tmp/pp-z3-off.jsonl" || fail "--offload params under pp changed the losses"
expect_error 1 train --model gpt-nano --steps 1 --offload optimizer --device cpu
expect_error 1 train --model gpt-nano --steps 1 --devices 2 --device sim --zero 2 --offload params
out=$("$dlf" plan --model gpt-medium --devices 8 --zero 2 --offload optimizer) ||
  fail "plan --offload optimizer: $out"
echo "$out" | grep -q "ZeRO-2, optimizer offloaded" || fail "plan does not say it offloads: $out"
echo "$out" | grep "at its peak" | grep -q "optimizer state" && fail "offloaded state planned on the device: $out"
out=$("$dlf" plan --model gpt-medium --devices 8 --zero 3 --offload params) ||
  fail "plan --offload params: $out"
echo "$out" | grep -q "ZeRO-3, optimizer and parameters offloaded" || fail "plan does not say it offloads the parameters: $out"
expect_error 1 plan --model gpt-medium --devices 8 --zero 1 --offload params
# a family's replica under ZeRO is planned as parallel/ runs it (its step over a planning group):
# vit-tiny's ZeRO-3 peak on 2 sim devices is the run's, within 0.1 %
for z in 2 3; do
  planned=$("$dlf" plan --model vit-tiny --devices 2 --zero $z --json | sed -n 's/.*"peak_bytes":\([0-9.e+]*\).*/\1/p')
  "$dlf" --threads 1 train --model vit-tiny --devices 2 --dp 2 --zero $z --steps 2 --eval-batches 1 --device sim:a100-40gb \
    --metrics "$tmp/vit-zero$z.jsonl" >/dev/null 2>&1 || fail "vit-tiny --zero $z on sim"
  measured=$(grep '"step":2,.*"sim_peak_bytes"' "$tmp/vit-zero$z.jsonl" | sed 's/.*"sim_peak_bytes":\([0-9.e+]*\).*/\1/')
  [ -n "$planned" ] && close "$planned" "$measured" 0.001 ||
    fail "vit-tiny --zero $z: planned peak $planned against the run's $measured"
done
expect_error 1 plan --model gpt-nano --devices 8 --batch 20  # 20 sequences over 8 replicas
expect_error 2 train --model gpt-nano --zero 4
expect_error 1 train --model gpt-nano --steps 1 --devices 2 --zero 3 --check-replicas 1
train --steps 2 --devices 4 --metrics "$tmp/dp4.jsonl" --trace "$tmp/trace.json" 2>"$tmp/log" ||
  fail "train --devices 4: $(cat "$tmp/log")"
grep -q "on a100-40gb" "$tmp/log" || fail "--devices 4 is not on sim devices by default"
grep -q "sim .* ms/step (dp comm" "$tmp/log" || fail "no simulated step report: $(cat "$tmp/log")"
grep -q '"sim_step_ms"' "$tmp/dp4.jsonl" || fail "no sim_step_ms in the metrics"
grep -q '"name":"comm"' "$tmp/trace.json" || fail "trace has no comm track"
grep -q '"name":"allreduce world ' "$tmp/trace.json" || fail "trace has no allreduce"
grep -q '"name":"matmul \[' "$tmp/trace.json" || fail "trace ops are not named with shapes"
sim_spec tiny 1000000 >"$tmp/tiny.json"
sim_spec small 200000000 >"$tmp/small.json"
# the layout must fit this machine's memory too (DLF_HOST_MEMORY stands for a small host)
out=$(DLF_HOST_MEMORY=1G "$dlf" train --model gpt-mini --devices 4 --steps 1 --batch 4 2>&1) ||
  fail "a layout that fits a 1 GiB host: $out"
echo "$out" | grep -q "dp 4 x tp 1 x pp 1 .*does not fit the host" || fail "dp 4 should not fit 1G: $out"
echo "$out" | grep "<- chosen" | grep -qv "dp 4 x" || fail "a layout that fits the host was not chosen: $out"
err=$(DLF_HOST_MEMORY=20M "$dlf" train --model gpt-mini --devices 4 --steps 1 2>&1 >/dev/null)
[ $? -eq 1 ] || fail "no layout fits a 20 MiB host: expected exit 1"
printf '%s\n' "$err" | tail -n 1 | grep -q "needs about .* of host memory .* and 20.00 MiB is available" ||
  fail "host refusal: $err"
err=$(DLF_HOST_MEMORY=20M "$dlf" train --model gpt-mini --dp 2 --steps 1 2>&1 >/dev/null)
[ $? -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "explicit layout, small host: $err"
# a planned layout that fits no device, with any memory flags, is refused up front
sim_spec wee 500000 >"$tmp/wee.json"
err=$("$dlf" train --model gpt-nano --steps 2 --batch 4 --devices 2 --device "sim:$tmp/wee.json" 2>&1 >/dev/null)
[ $? -eq 1 ] || fail "no layout fits: expected exit 1"
printf '%s\n' "$err" | tail -n 1 | grep -q "does not fit 2 devices of wee in any dp x tp x pp layout" ||
  fail "no layout fits: $err"
# no layout fits as asked, but one does with memory saving: --devices alone searches layouts x
# memory flags x micro-batches as dlf plan does, says first what it chose, and keeps given flags
sim_spec snug 1250000 >"$tmp/snug.json"
train --steps 2 --devices 2 --device "sim:$tmp/snug.json" 2>"$tmp/log" || fail "snug devices: $(cat "$tmp/log")"
chosen=$(head -n 1 "$tmp/log" | sed -n 's/^chosen: \(dp [0-9]* x tp [0-9]* x pp [0-9]*\), --offload optimizer --micro-batch \([0-9]*\) (peak .*): no layout fits with the memory flags given.*/\1 \2/p')
[ -n "$chosen" ] || fail "snug devices: the first line does not say what was chosen: $(cat "$tmp/log")"
layout=${chosen% *} micro=${chosen##* }
grep -q "over 2 ranks ($layout, [0-9]* micro-batches of $micro" "$tmp/log" ||
  fail "snug devices: the run is not the one chosen ($chosen): $(cat "$tmp/log")"
# the flags given are kept: without offload nothing fits (what the planner and a run agree on)
err=$("$dlf" train --model gpt-nano --steps 2 --batch 4 --seq 32 --devices 2 --offload none \
  --device "sim:$tmp/snug.json" 2>&1 >/dev/null)
[ $? -eq 1 ] && printf '%s\n' "$err" | tail -n 1 | grep -q "does not fit 2 devices of snug" ||
  fail "snug devices, --offload none: expected the refusal: $err"
# out of memory mid-run (a layout given, not planned): the run's header, then one error line
# naming what is live
err=$("$dlf" train --model gpt-nano --steps 2 --batch 4 --dp 2 --device "sim:$tmp/tiny.json" 2>&1 >/dev/null)
[ $? -eq 1 ] || fail "out of memory: expected exit 1"
last=$(printf '%s\n' "$err" | tail -n 1)
case "$last" in "dlf: rank "*"is out of memory"*parameters*) ;; *) fail "out of memory message: $err" ;; esac
# ... and says which --recompute and --zero would fit, from the plan of the run: here none
case "$last" in *"no --recompute, --zero or --offload makes this layout fit"*) ;; *) fail "no flags hint: $last" ;; esac
out=$("$dlf" plan --model gpt-mini --devices 4 --device "sim:$tmp/small.json" --batch 8) || fail "plan small"
grep -q "planned to fit with --zero" <<<"$out" || fail "plan: no flags that fit: $out"
expect_error 1 train --model gpt-nano --steps 1 --batch 4 --devices 3 --dp 3
expect_error 1 train --model gpt-nano --steps 1 --device tpu
expect_error 1 train --model gpt-nano --steps 1 --device sim:tpu-v9
grep -q "h200, b200, trn1, trn1n, trn2, trn2-lnc2, trn2-ultra" <<<"$err" ||
  fail "the unknown preset's refusal does not list the presets: $err"
expect_error 2 train --model gpt-nano --steps 1 --devices 0
expect_error 1 train --model gpt3-175b --steps 1
echo "cli over several devices: all checks passed"
