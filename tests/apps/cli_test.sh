#!/usr/bin/env bash
# The dlf command line: the demo trains; train, checkpoint, resume, generate, eval; plan; bad input gets one line and exit != 0.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

out=$("$dlf" --threads 1 demo --steps 200 2>&1) || fail "demo exited $?: $out"
first=$(echo "$out" | awk '/^step +1 /{print $4}')
final=$(echo "$out" | awk '/final loss/{for (i = 1; i <= NF; ++i) if ($i == "loss") print $(i + 1)}' | tr -d ' ')
[ -n "$first" ] && [ -n "$final" ] || fail "no loss lines in: $out"
awk -v a="$first" -v b="$final" 'BEGIN { exit !(b < a / 2) }' || fail "loss did not halve: $first -> $final"
echo "$out" | grep -q "^linear " || fail "no per-op cost table"
a=$("$dlf" --threads 1 demo --steps 3 --hidden 8 --lr 0.01 --seed 3 | grep "final loss") || fail "demo options"
b=$("$dlf" --threads 1 demo --steps 3 --hidden 8 --lr 0.01 --seed 3 | grep "final loss")
loss_of() { sed 's/.*final loss \([^ ]*\).*/\1/' <<<"$1"; }
[ "$(loss_of "$a")" = "$(loss_of "$b")" ] || fail "the same seed gave different runs: $a / $b"
echo "$a" | grep -q "3 steps" || fail "--steps not applied: $a"
expect_error 2 demo --steps -3
expect_error 2 demo --bogus
expect_error 2 --threads 0 demo
expect_error 2 frobnicate
"$dlf" --help | grep -q demo || fail "--help does not list demo"
DLF_NUM_THREADS=1 "$dlf" demo --steps 1 | grep -q ", 1 threads" || fail "DLF_NUM_THREADS=1 not applied"
DLF_NUM_THREADS=1 "$dlf" --threads 2 demo --steps 1 | grep -q ", 2 threads" || fail "--threads does not override DLF_NUM_THREADS"
# train, checkpoint, resume (bit for bit), generate, eval
train --steps 4 --checkpoint "$tmp/straight" --metrics "$tmp/straight.jsonl" 2>"$tmp/log" ||
  fail "train: $(cat "$tmp/log")"
grep -q "checkpoint saved" "$tmp/log" || fail "no checkpoint message: $(cat "$tmp/log")"
[ "$(losses "$tmp/straight.jsonl" | wc -l)" -eq 4 ] || fail "expected 4 metrics lines"
train --steps 3 --eval-every 2 --save-every 2 --checkpoint "$tmp/every" --metrics "$tmp/every.jsonl" \
  2>"$tmp/log" || fail "train --eval-every: $(cat "$tmp/log")"
[ "$(grep -c val_loss "$tmp/every.jsonl")" -eq 2 ] || fail "--eval-every 2 of 3 steps: $(cat "$tmp/every.jsonl")"
[ "$(grep -c "checkpoint saved" "$tmp/log")" -eq 2 ] || fail "--save-every 2 of 3 steps: $(cat "$tmp/log")"
train --steps 4 --until 2 --checkpoint "$tmp/stopped" --metrics "$tmp/resumed.jsonl" 2>/dev/null ||
  fail "train --until"
[ -f "$tmp/stopped/checkpoint.h5" ] || fail "no checkpoint after --until"
"$dlf" --threads 1 train --model gpt-nano --checkpoint "$tmp/stopped" --resume \
  --metrics "$tmp/resumed.jsonl" 2>"$tmp/log" || fail "resume: $(cat "$tmp/log")"
grep -q "resuming from step 2" "$tmp/log" || fail "resume did not start at step 2: $(cat "$tmp/log")"
[ "$(losses "$tmp/straight.jsonl")" = "$(losses "$tmp/resumed.jsonl")" ] ||
  fail "resumed losses differ: $(losses "$tmp/straight.jsonl" | tr '\n' ' ') vs $(losses "$tmp/resumed.jsonl" | tr '\n' ' ')"
# activation recompute, full or selective, trains on the same gradients: the same losses, bit
# for bit
for what in full selective; do
  train --steps 4 --recompute $what --metrics "$tmp/recompute.jsonl" 2>/dev/null || fail "--recompute $what"
  [ "$(losses "$tmp/straight.jsonl")" = "$(losses "$tmp/recompute.jsonl")" ] ||
    fail "recompute $what changed the losses: $(losses "$tmp/recompute.jsonl" | tr '\n' ' ')"
done
expect_error 2 train --model gpt-nano --recompute some
text=$("$dlf" generate --checkpoint "$tmp/straight" --prompt "Hello" --tokens 20) || fail "generate"
case "$text" in Hello*) ;; *) fail "generate does not start with the prompt: $text" ;; esac
[ "${#text}" -ge 25 ] || fail "generate made fewer than 20 bytes: $text"
"$dlf" eval --checkpoint "$tmp/straight" --batches 2 | grep -q "validation loss" || fail "eval"

expect_error 2 train --model gpt-huge
expect_error 2 train --steps 0
expect_error 2 train --model gpt-nano --lr -1
expect_error 1 train --model gpt-nano --resume
expect_error 1 train --model gpt-nano --seq 65 --steps 1
expect_error 1 train --model gpt-nano --data "$tmp/no-such-file" --steps 1
expect_error 1 train --model gpt-mini --checkpoint "$tmp/straight" --resume
expect_error 2 generate --prompt hi
expect_error 1 generate --checkpoint "$tmp/nothing-here"
cp "$tmp/straight/checkpoint.h5" "$tmp/whole.h5"
truncate -s 20000 "$tmp/straight/checkpoint.h5"
expect_error 1 generate --checkpoint "$tmp/straight"
expect_error 1 train --model gpt-nano --checkpoint "$tmp/straight" --resume
"$dlf" train --help | grep -q -- "--resume" || fail "train --help"

# plan: a batch in dlf train's default micro-batch (without a pipeline, the replica's rows at
# once) peaks as the run does (a step starts without gradients, so none are counted at the
# forward's peak): gpt-nano's second step on a sim device within 1 %
planned=$("$dlf" plan --model gpt-nano --devices 1 --batch 4 --seq 32 --json |
  sed -n 's/.*"peak_bytes":\([0-9.e+]*\).*/\1/p')
train --steps 2 --device sim:a100-40gb --metrics "$tmp/plan-run.jsonl" 2>/dev/null || fail "train on sim"
measured=$(grep '"step":2,.*"sim_peak_bytes"' "$tmp/plan-run.jsonl" |
  sed 's/.*"sim_peak_bytes":\([0-9.e+]*\).*/\1/')
[ -n "$planned" ] && close "$planned" "$measured" 0.01 ||
  fail "planned peak $planned against the run's $measured"
# plan: GPT-3 175B over 1024 devices on meta devices
out=$("$dlf" plan --model gpt3-175b --devices 1024 --tp 8 --pp 8 --device sim:h100-80gb --batch 1536 --precision bf16 --recompute full) ||
  fail "plan: $out"
grep -q "dp 16 x tp 8 x pp 8" <<<"$out" || fail "plan layout: $out"
grep -q "parameters .* GiB, gradients .* GiB, optimizer state .* GiB, activations" <<<"$out" ||
  fail "plan memory by category: $out"
grep -q "predicted .* tokens/s" <<<"$out" || fail "plan throughput: $out"
out=$("$dlf" plan --model gpt-small --devices 8 --tp 2 --pp 2 --json) || fail "plan --json: $out"
for field in bench stage_ms bubble_fraction p2p_ms dp_exposed_ms slowest_stage stage1_peak_bytes; do
  grep -q "\"$field\":" <<<"$out" || fail "plan --json has no $field: $out"
done
# plan: where the step goes, and the one line that says what limits it (dp 16 of one
# 64-token sequence each over 100 Gb/s Ethernet: dp's gradient allreduce)
out=$("$dlf" plan --model gpt-small --devices 16 --device sim:l4-24gb --batch 16 --seq 64) ||
  fail "plan breakdown: $out"
grep -q "where the step goes:" <<<"$out" || fail "plan prints no breakdown: $out"
grep -Eq "^  limited by the collectives of dp over Ethernet \(12.5 GB/s a device\): [0-9]+ % of the step" <<<"$out" ||
  fail "plan does not say dp's allreduce over Ethernet limits it: $out"
json=$("$dlf" plan --model gpt-small --devices 16 --device sim:l4-24gb --batch 16 --seq 64 --json)
grep -q '"limited_by":"dp comm"' <<<"$json" || fail "plan --json has no limited_by: $json"
out=$("$dlf" plan --model gpt-small --devices 2 --pp 2) || fail "plan --pp 2: $out"
grep -Eq "per micro-batch on stage [01] \([0-9]+ layers, the slowest\)" <<<"$out" ||
  fail "plan does not name the bottleneck stage: $out"
# a GPT by its dimensions: gpt-nano's are its plan, to the byte and the second
by_name=$("$dlf" plan --model gpt-nano --devices 2 --json | sed 's/"case":"[^"]*",//')
by_dims=$("$dlf" plan --layers 2 --hidden 64 --heads 4 --vocab 256 --seq 64 --devices 2 --json |
  sed 's/"case":"[^"]*",//')
[ -n "$by_name" ] && [ "$by_name" = "$by_dims" ] || fail "gpt-nano by its dimensions: $by_dims vs $by_name"
out=$("$dlf" plan --layers 96 --hidden 12288 --heads 96 --devices 1024 --tp 8 --pp 8 \
  --device sim:h100-80gb --batch 1536 --precision bf16 --recompute full) || fail "plan by dimensions: $out"
grep -q "^gpt (96 layers, hidden 12288, 96 heads) (174.6B parameters)" <<<"$out" || fail "175B by dimensions: $out"
expect_error 1 plan --layers 2 --hidden 64 --devices 2
expect_error 1 plan --layers 2 --hidden 66 --heads 4 --devices 2
expect_error 2 plan --model gpt-nano --layers 2 --hidden 64 --heads 4 --devices 2
# every family plans data-parallel layouts from its own model; what does not fit says what would
for m in bert-mini vit-tiny unet-tiny; do
  out=$("$dlf" plan --model $m --devices 4) || fail "plan $m: $out"
  grep -q "dp 4, f32" <<<"$out" && grep -q "fits" <<<"$out" || fail "plan $m: $out"
done
expect_error 1 plan --model vit-tiny --devices 4 --tp 2
# (searches run each configuration's real step on meta devices: a minute here, far longer under
# AddressSanitizer; the release pass runs them)
if ! asan_build; then
  out=$("$dlf" plan --model gpt3-175b --devices 1024 --device sim:h100-80gb --batch 2048) ||
    fail "plan gpt3-175b: $out"
  grep -q "if it fit: it does not" <<<"$out" && grep -q "fits on 1024 devices: --tp" <<<"$out" ||
    fail "plan gpt3-175b on 1024, dp only: $out"
  # ... searching layouts, memory flags and micro-batches together: on 64 devices only a layout
  # that recomputes every block and keeps the optimizer in host memory fits; on one, nothing does
  out=$("$dlf" plan --model gpt3-175b --devices 64) || fail "plan gpt3-175b: $out"
  grep -q "fits on 64 devices: --tp .* --recompute full .*--offload [a-z]* --micro-batch" <<<"$out" ||
    fail "plan gpt3-175b on 64: $out"
  out=$("$dlf" plan --model gpt3-175b --devices 1) || fail "plan gpt3-175b on 1: $out"
  grep -q "no dp x tp x pp layout of 1 devices fits with any --recompute" <<<"$out" ||
    fail "plan gpt3-175b on 1: $out"
fi
expect_error 1 plan --model gpt-small --devices 10 --tp 4
expect_error 1 plan --model gpt-small --devices 8 --tp 8
expect_error 1 plan --model gpt-small --devices 2 --device cpu
expect_error 2 plan --model gpt-small
# a machine by name: 2 DGX H100 nodes are 16 h100-80gb devices; a trn1.32xlarge holds 32 cores
out=$("$dlf" plan --model gpt-small --system dgx-h100 --nodes 2 --batch 32 --json) || fail "plan --system: $out"
grep -q '"devices":16,' <<<"$out" && grep -q '"device":"h100-80gb"' <<<"$out" || fail "plan --system dgx-h100: $out"
out=$("$dlf" plan --model gpt-small --system trn1.32xlarge --nodes 1 --tp 4 --batch 32) || fail "plan trn1: $out"
grep -q "32 x trn1" <<<"$out" || fail "plan --system trn1.32xlarge: $out"
expect_error 1 plan --model gpt-small --system trn9.huge --nodes 1
expect_error 2 plan --model gpt-small --system dgx-h100
expect_error 2 plan --model gpt-small --system dgx-h100 --nodes 2 --devices 16
expect_error 2 plan --model gpt-small --system dgx-h100 --nodes 2 --device sim:a100-40gb
# global options anywhere; an unknown option gets the closest known one; --version; help
"$dlf" demo --steps 1 --threads 1 | grep -q ", 1 threads" || fail "--threads after the command"
err=$("$dlf" train --stpes 3 2>&1 >/dev/null); [ $? -eq 2 ] || fail "--stpes: exit code"
[ "$err" = "dlf: unknown option --stpes of dlf train (did you mean --steps?) (see dlf help train)" ] ||
  fail "--stpes: $err"
# a suggestion is an option of that command (eval takes its model from the checkpoint), and a
# mistyped command gets the command
err=$("$dlf" eval --checkpoint x --model gpt-nano 2>&1 >/dev/null)
[ "$err" = "dlf: unknown option --model of dlf eval (see dlf help eval)" ] || fail "eval --model: $err"
err=$("$dlf" trian --model gpt-nano 2>&1 >/dev/null); [ $? -eq 2 ] || fail "trian: exit code"
[ "$err" = "dlf: unknown command trian (did you mean train?) (see dlf --help)" ] || fail "trian: $err"
# --zero's help says what a run without it does (no sharding), and --zero alone is stage 1
"$dlf" help train | grep -- "--zero" | grep -q "(default: no sharding; --zero alone: 1)" ||
  fail "--zero's help: $("$dlf" help train | grep -- "--zero")"
! "$dlf" help train | grep -- "--zero INT[^ ]*=" || fail "--zero's help shows a default stage"
# one default batch: dlf plan plans the batch dlf train runs, on any number of devices
for m in gpt-nano bert-tiny vit-tiny unet-tiny; do
  "$dlf" --threads 1 train --model $m --steps 1 --eval-batches 1 --devices 2 --device cpu 2>"$tmp/log" >/dev/null ||
    fail "train $m on 2: $(cat "$tmp/log")"
  trained=$(sed -n 's/.*parameters, batch \([0-9]*\).*/\1/p' "$tmp/log")
  planned=$("$dlf" plan --model $m --devices 2 --json | sed 's/.*"batch":\([0-9]*\).*/\1/')
  [ -n "$trained" ] && [ "$trained" = "$planned" ] || fail "$m on 2 devices: train's batch $trained, plan's $planned"
done
"$dlf" --version | grep -qx "dlf [0-9]*\.[0-9]*\.[0-9]*" || fail "--version: $("$dlf" --version)"
"$dlf" help | grep -q "Usage: dlf \[OPTIONS\] SUBCOMMAND" || fail "dlf help"
"$dlf" help train | grep -q "Usage: dlf train" || fail "dlf help train"
expect_error 2 help nothing
# --resume: a new schedule is taken and said; what the data depends on is refused
train --steps 4 --until 2 --checkpoint "$tmp/override" 2>/dev/null || fail "train for --resume overrides"
"$dlf" --threads 1 train --checkpoint "$tmp/override" --resume --lr 5e-4 2>"$tmp/log" ||
  fail "--resume --lr: $(cat "$tmp/log")"
grep -q "resuming with --lr 0.0005 (the checkpoint's run used 0.001)" "$tmp/log" || fail "--resume --lr: $(cat "$tmp/log")"
grep -q "gpt-nano: .*resuming from step 2" "$tmp/log" || fail "--resume without --model: $(cat "$tmp/log")"
expect_error 1 train --checkpoint "$tmp/override" --resume --batch 16 --steps 6
expect_error 1 train --checkpoint "$tmp/override" --resume --seed 7 --steps 6
# nothing is overwritten unasked: a checkpoint directory holding a run, a convert's output
train --steps 2 --checkpoint "$tmp/kept" 2>/dev/null || fail "train for the overwrite checks"
cp "$tmp/kept/checkpoint.h5" "$tmp/kept.h5"
expect_error 1 train --steps 2 --checkpoint "$tmp/kept"
[ "$err" = "dlf: $tmp/kept holds a gpt-nano checkpoint at step 2: continue it with --resume, or start a new run over it with --overwrite" ] ||
  fail "train over a checkpoint: $err"
"$dlf" --threads 1 train --model bert-tiny --steps 1 --seq 16 --checkpoint "$tmp/bert" 2>/dev/null || fail "bert-tiny"
cp "$tmp/bert/checkpoint.h5" "$tmp/bert.h5"
expect_error 1 convert "$tmp/kept" "$tmp/bert"
[ "$err" = "dlf: $tmp/bert holds a bert-tiny checkpoint at step 1: give --overwrite to replace it" ] ||
  fail "convert over a checkpoint: $err"
cmp -s "$tmp/bert/checkpoint.h5" "$tmp/bert.h5" || fail "a refused convert changed the checkpoint"
"$dlf" convert "$tmp/kept" "$tmp/kept.safetensors" >/dev/null || fail "convert to safetensors"
expect_error 1 convert "$tmp/kept" "$tmp/kept.safetensors"
echo "$err" | grep -q "kept.safetensors holds gpt-nano weights: give --overwrite" || fail "convert over a file: $err"
"$dlf" convert "$tmp/kept" "$tmp/bert" --overwrite >/dev/null || fail "convert --overwrite"
train --steps 3 --checkpoint "$tmp/kept" --overwrite 2>"$tmp/log" || fail "train --overwrite: $(cat "$tmp/log")"
grep -q "training from step 0 to 3" "$tmp/log" || fail "--overwrite did not start anew: $(cat "$tmp/log")"
expect_error 2 train --steps 3 --checkpoint "$tmp/kept" --overwrite --resume
# outputs that cannot be written are refused before the first step, in one line
for args in "--checkpoint /proc/dlf-x" "--metrics /proc/dlf-x.jsonl" "--trace /proc/dlf-x.json" \
  "--report /proc/dlf-x.html" "--checkpoint $tmp/kept/checkpoint.h5"; do
  # shellcheck disable=SC2086
  expect_error 1 train --model gpt-nano --steps 100000 $args
done
expect_error 1 train --model gpt-nano --steps 1 --report "$tmp"
expect_error 1 calibrate --out /proc/dlf-x.json
expect_error 1 graph --model gpt-nano --dot /proc/dlf-x.dot
# the first line of a run says when nothing will be saved, and what --devices N means here
train --steps 1 2>&1 >/dev/null | head -n 1 | grep -q "nothing will be saved (no --checkpoint)" ||
  fail "no word that nothing is saved"
train --steps 1 --devices 2 2>&1 >/dev/null | head -n 1 |
  grep -q "^2 ranks on simulated a100-40gb devices .*--device cpu runs them on this CPU" ||
  fail "--devices 2 does not say it simulates"
echo "cli: all checks passed"
