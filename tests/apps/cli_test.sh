#!/usr/bin/env bash
# Smoke test of the dlf command line: the demo trains, bad input gets one line and exit != 0.
set -u
dlf=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

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

expect_error() {  # expect_error CODE ARGS...: exit code CODE and exactly one line on stderr
  local code=$1; shift
  err=$("$dlf" "$@" 2>&1 >/dev/null); got=$?
  [ "$got" -eq "$code" ] || fail "dlf $*: exit $got, expected $code"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "dlf $*: stderr is not one line: $err"
  case "$err" in dlf:*) ;; *) fail "dlf $*: stderr does not start with 'dlf:': $err" ;; esac
}
expect_error 2 demo --steps -3
expect_error 2 demo --bogus
expect_error 2 --threads 0 demo
expect_error 2 frobnicate
"$dlf" --help | grep -q demo || fail "--help does not list demo"
DLF_NUM_THREADS=1 "$dlf" demo --steps 1 | grep -q ", 1 threads" || fail "DLF_NUM_THREADS=1 not applied"
DLF_NUM_THREADS=1 "$dlf" --threads 2 demo --steps 1 | grep -q ", 2 threads" || fail "--threads does not override DLF_NUM_THREADS"
# train, checkpoint, resume (bit for bit), generate, eval
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
train() { "$dlf" --threads 1 train --model gpt-nano --batch 4 --seq 32 "$@"; }
losses() { grep '"loss"' "$1" | sed 's/.*"loss":\([^,]*\).*/\1/'; }
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
# activation recompute trains on the same gradients: the same losses, bit for bit
train --steps 4 --recompute full --metrics "$tmp/recompute.jsonl" 2>/dev/null || fail "--recompute full"
[ "$(losses "$tmp/straight.jsonl")" = "$(losses "$tmp/recompute.jsonl")" ] ||
  fail "recompute changed the losses: $(losses "$tmp/recompute.jsonl" | tr '\n' ' ')"
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

# data parallelism: dp=2 on cpu ranks and dp=4 on sim devices give one device's losses
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (a < 0 ? -a : a)) }'; }
same_losses() {  # same_losses A.jsonl B.jsonl: every step's loss within 1e-5 relative
  paste <(losses "$1") <(losses "$2") | while read -r a b; do close "$a" "$b" || exit 1; done
}
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
expect_error 2 train --model gpt-nano --zero 4
expect_error 1 train --model gpt-nano --steps 1 --devices 2 --zero 3 --check-replicas 1
expect_error 1 train --model gpt-nano --steps 1 --devices 4 --tp 2 --zero 3
train --steps 2 --devices 4 --metrics "$tmp/dp4.jsonl" --trace "$tmp/trace.json" 2>"$tmp/log" ||
  fail "train --devices 4: $(cat "$tmp/log")"
grep -q "on a100-40gb" "$tmp/log" || fail "--devices 4 is not on sim devices by default"
grep -q "sim .* ms/step (dp allreduce" "$tmp/log" || fail "no simulated step report: $(cat "$tmp/log")"
grep -q '"sim_step_ms"' "$tmp/dp4.jsonl" || fail "no sim_step_ms in the metrics"
grep -q '"name":"comm"' "$tmp/trace.json" || fail "trace has no comm track"
grep -q '"name":"allreduce world ' "$tmp/trace.json" || fail "trace has no allreduce"
grep -q '"name":"matmul \[' "$tmp/trace.json" || fail "trace ops are not named with shapes"
printf '%s\n' '{"device": {"name": "tiny", "memory_bytes": 1000000, "peak_flops_f64": 1e12,' \
  '"peak_flops_f32": 1e12, "peak_flops_bf16": 1e12, "memory_bandwidth": 1e11,' \
  '"launch_overhead": 0, "host_link": {"bandwidth": 1e10, "latency": 0},' \
  '"interconnect": {"bandwidth": 1e10, "latency": 0}, "topology": "ring", "node_size": 8,' \
  '"network": {"bandwidth": 1e10, "latency": 0}}}' >"$tmp/tiny.json"
sed 's/"memory_bytes": 1000000/"memory_bytes": 200000000/; s/"tiny"/"small"/' "$tmp/tiny.json" >"$tmp/small.json"
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
# a planned layout that fits no device is refused up front
err=$("$dlf" train --model gpt-nano --steps 2 --batch 4 --devices 2 --device "sim:$tmp/tiny.json" 2>&1 >/dev/null)
[ $? -eq 1 ] || fail "no layout fits: expected exit 1"
printf '%s\n' "$err" | tail -n 1 | grep -q "does not fit 2 devices of tiny in any dp x tp x pp layout" ||
  fail "no layout fits: $err"
# out of memory mid-run (a layout given, not planned): the run's header, then one error line
# naming what is live
err=$("$dlf" train --model gpt-nano --steps 2 --batch 4 --dp 2 --device "sim:$tmp/tiny.json" 2>&1 >/dev/null)
[ $? -eq 1 ] || fail "out of memory: expected exit 1"
last=$(printf '%s\n' "$err" | tail -n 1)
case "$last" in "dlf: rank "*"is out of memory"*parameters*) ;; *) fail "out of memory message: $err" ;; esac
# ... and says which --recompute and --zero would fit, from the plan of the run: here none
case "$last" in *"no --recompute or --zero makes this layout fit"*) ;; *) fail "no flags hint: $last" ;; esac
out=$("$dlf" plan --model gpt-mini --devices 4 --device "sim:$tmp/small.json" --batch 8) || fail "plan small"
grep -q "planned to fit with --zero" <<<"$out" || fail "plan: no flags that fit: $out"
expect_error 1 train --model gpt-nano --steps 1 --batch 4 --devices 3 --dp 3
expect_error 1 train --model gpt-nano --steps 1 --device tpu
expect_error 1 train --model gpt-nano --steps 1 --device sim:b200
expect_error 1 train --model gpt-nano --steps 1 --device cpu --trace "$tmp/t.json"
expect_error 2 train --model gpt-nano --steps 1 --devices 0
expect_error 1 train --model gpt3-175b --steps 1

# dp x tp x pp: the mesh gives one device's losses; --devices alone plans the layout
train --steps 3 --dp 2 --tp 2 --pp 2 --device cpu --metrics "$tmp/mesh.jsonl" 2>"$tmp/log" ||
  fail "train --dp 2 --tp 2 --pp 2: $(cat "$tmp/log")"
grep -q "over 8 ranks (dp 2 x tp 2 x pp 2, 2 micro-batches of 1 (1F1B))" "$tmp/log" ||
  fail "mesh header: $(cat "$tmp/log")"
same_losses "$tmp/dp1.jsonl" "$tmp/mesh.jsonl" || fail "dp 2 x tp 2 x pp 2 losses differ from one device's"
train --steps 3 --pp 2 --schedule gpipe --micro-batch 2 --device cpu --metrics "$tmp/gpipe.jsonl" \
  2>/dev/null || fail "train --pp 2 --schedule gpipe"
same_losses "$tmp/dp1.jsonl" "$tmp/gpipe.jsonl" || fail "GPipe losses differ from one device's"
train --steps 2 --devices 4 --device sim 2>"$tmp/log" || fail "train --devices 4: $(cat "$tmp/log")"
grep -q "layout planned on 4 meta devices of a100-40gb" "$tmp/log" || fail "no layout plan: $(cat "$tmp/log")"
grep -q "<- chosen" "$tmp/log" || fail "no chosen layout: $(cat "$tmp/log")"
train --steps 2 --tp 2 --pp 2 --device sim --trace "$tmp/pp-trace.json" 2>"$tmp/log" ||
  fail "train --tp 2 --pp 2 on sim: $(cat "$tmp/log")"
grep -q "peak memory by pipeline stage: .* | " "$tmp/log" || fail "no per-stage peak: $(cat "$tmp/log")"
grep -q '"name":"send_recv pp ' "$tmp/pp-trace.json" || fail "the pipeline's sends are not in the trace"
# a checkpoint holds the whole model whatever the layout: resume it in the same layout bit for
# bit, or in another one
train --steps 4 --tp 2 --pp 2 --device cpu --checkpoint "$tmp/m-straight" \
  --metrics "$tmp/m-straight.jsonl" 2>/dev/null || fail "train --tp 2 --pp 2 --checkpoint"
train --steps 4 --until 2 --tp 2 --pp 2 --device cpu --checkpoint "$tmp/m-stopped" \
  --metrics "$tmp/m-resumed.jsonl" 2>/dev/null || fail "train --tp 2 --pp 2 --until"
cp -r "$tmp/m-stopped" "$tmp/m-elsewhere"
"$dlf" --threads 1 train --model gpt-nano --tp 2 --pp 2 --device cpu --checkpoint "$tmp/m-stopped" \
  --resume --metrics "$tmp/m-resumed.jsonl" 2>"$tmp/log" || fail "resume --tp 2 --pp 2: $(cat "$tmp/log")"
[ "$(losses "$tmp/m-straight.jsonl")" = "$(losses "$tmp/m-resumed.jsonl")" ] ||
  fail "tp/pp resumed losses differ: $(losses "$tmp/m-straight.jsonl" | tr '\n' ' ') vs $(losses "$tmp/m-resumed.jsonl" | tr '\n' ' ')"
"$dlf" --threads 1 train --model gpt-nano --dp 2 --device cpu --checkpoint "$tmp/m-elsewhere" \
  --resume --metrics "$tmp/m-elsewhere.jsonl" 2>/dev/null || fail "resume a tp/pp checkpoint with dp 2"
same_losses <(grep '"loss"' "$tmp/m-straight.jsonl" | tail -n 2) "$tmp/m-elsewhere.jsonl" ||
  fail "resharded resume differs"
"$dlf" generate --checkpoint "$tmp/m-straight" --prompt "Hi" --tokens 5 >/dev/null ||
  fail "generate from a tp/pp checkpoint"
expect_error 1 train --model gpt-nano --steps 1 --tp 3 --device cpu
expect_error 1 train --model gpt-nano --steps 1 --pp 4 --device cpu
expect_error 1 train --model gpt-nano --steps 1 --devices 4 --dp 3
expect_error 1 train --model gpt-nano --steps 1 --batch 4 --pp 2 --micro-batch 3
expect_error 1 train --model gpt-nano --steps 1 --tp 2 --zero 2
# ZeRO-1 over the data-parallel group of a dp x tp x pp mesh: the same losses, bit for bit
train --steps 3 --devices 8 --dp 2 --tp 2 --pp 2 --device cpu --metrics "$tmp/m3.jsonl" \
  2>/dev/null || fail "dp2 tp2 pp2"
train --steps 3 --devices 8 --dp 2 --tp 2 --pp 2 --device cpu --zero \
  --metrics "$tmp/m3z.jsonl" 2>/dev/null || fail "dp2 tp2 pp2 --zero"
[ "$(losses "$tmp/m3.jsonl")" = "$(losses "$tmp/m3z.jsonl")" ] || fail "ZeRO-1 under tp and pp changed the losses"
expect_error 1 train --model gpt-nano --steps 1 --pp 2 --schedule zigzag

# BERT: masked LM on the same text, reporting masked-byte accuracy; dp 2 gives one device's
# losses (each replica's loss weighted by its share of the masked bytes); resume is exact
bert() { "$dlf" --threads 1 train --model bert-tiny --batch 8 --seq 64 "$@"; }
bert --steps 3 --metrics "$tmp/bert1.jsonl" 2>"$tmp/log" || fail "train bert-tiny: $(cat "$tmp/log")"
grep -q "validation loss .*, masked_accuracy 0\.[0-9]" "$tmp/log" || fail "no masked accuracy: $(cat "$tmp/log")"
bert --steps 3 --devices 2 --device cpu --metrics "$tmp/bert2.jsonl" 2>/dev/null || fail "bert dp 2"
same_losses "$tmp/bert1.jsonl" "$tmp/bert2.jsonl" || fail "bert dp=2 losses differ from one device's"
bert --steps 4 --checkpoint "$tmp/b-straight" --metrics "$tmp/b-straight.jsonl" 2>/dev/null ||
  fail "bert --checkpoint"
bert --steps 4 --until 2 --checkpoint "$tmp/b-stopped" --metrics "$tmp/b-resumed.jsonl" 2>/dev/null ||
  fail "bert --until"
"$dlf" --threads 1 train --model bert-tiny --checkpoint "$tmp/b-stopped" --resume \
  --metrics "$tmp/b-resumed.jsonl" 2>/dev/null || fail "bert --resume"
[ "$(losses "$tmp/b-straight.jsonl")" = "$(losses "$tmp/b-resumed.jsonl")" ] || fail "bert resumed losses differ"
# BERT's layers split over tp 2 give one device's losses; stopped under dp 2 x tp 2, a run
# resumes under tp 2 where the uninterrupted one went (the whole checkpoint cut again)
bert --steps 3 --tp 2 --device cpu --metrics "$tmp/bert-tp2.jsonl" 2>/dev/null || fail "bert tp 2"
same_losses "$tmp/bert1.jsonl" "$tmp/bert-tp2.jsonl" || fail "bert tp=2 losses differ from one device's"
bert --steps 4 --until 2 --dp 2 --tp 2 --device cpu --checkpoint "$tmp/b-mesh" \
  --metrics "$tmp/b-mesh.jsonl" 2>/dev/null || fail "bert --dp 2 --tp 2 --until"
"$dlf" --threads 1 train --model bert-tiny --checkpoint "$tmp/b-mesh" --resume --tp 2 --device cpu \
  --metrics "$tmp/b-mesh.jsonl" 2>/dev/null || fail "bert --resume --tp 2 from dp 2 x tp 2"
same_losses "$tmp/b-straight.jsonl" "$tmp/b-mesh.jsonl" || fail "bert resumed from tp 2 differs"
expect_error 1 train --model bert-tiny --steps 1 --pp 2 --device cpu
expect_error 1 generate --checkpoint "$tmp/b-straight" --prompt hi

# ViT and UNet on Fashion-MNIST: test accuracy / DDPM loss, dp 2 equals one device, and a UNet
# checkpoint samples to a PNG
images() { "$dlf" --threads 1 train --batch 8 --steps 2 --eval-batches 1 "$@"; }
images --model vit-tiny --metrics "$tmp/vit1.jsonl" 2>"$tmp/log" || fail "train vit-tiny: $(cat "$tmp/log")"
grep -q "validation loss .*, accuracy 0\.[0-9]" "$tmp/log" || fail "no test accuracy: $(cat "$tmp/log")"
images --model vit-tiny --devices 2 --device cpu --metrics "$tmp/vit2.jsonl" 2>/dev/null || fail "vit dp 2"
same_losses "$tmp/vit1.jsonl" "$tmp/vit2.jsonl" || fail "vit dp=2 losses differ from one device's"
images --model vit-tiny --tp 3 --device cpu --metrics "$tmp/vit-tp3.jsonl" 2>/dev/null || fail "vit tp 3"
same_losses "$tmp/vit1.jsonl" "$tmp/vit-tp3.jsonl" || fail "vit tp=3 losses differ from one device's"
expect_error 1 train --model vit-tiny --steps 1 --tp 2 --device cpu
expect_error 1 train --model unet-tiny --steps 1 --tp 2 --device cpu
images --model unet-tiny --metrics "$tmp/unet1.jsonl" --checkpoint "$tmp/unet" 2>"$tmp/log" ||
  fail "train unet-tiny: $(cat "$tmp/log")"
images --model unet-tiny --devices 2 --device cpu --metrics "$tmp/unet2.jsonl" 2>/dev/null || fail "unet dp 2"
same_losses "$tmp/unet1.jsonl" "$tmp/unet2.jsonl" || fail "unet dp=2 losses differ from one device's"
"$dlf" generate --model unet-tiny --checkpoint "$tmp/unet" --out "$tmp/samples.png" --samples 4 \
  --sampling-steps 5 >/dev/null || fail "generate unet samples"
[ "$(head -c 8 "$tmp/samples.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
  fail "samples.png is not a PNG"
expect_error 1 generate --checkpoint "$tmp/unet" --samples 4
expect_error 1 generate --model vit-tiny --checkpoint "$tmp/unet" --out "$tmp/x.png"

# MPI: one rank per process gives the in-process run's losses, bit for bit; checkpoints too
mpi() { mpirun --allow-run-as-root --oversubscribe -np "$1" "$dlf" --threads 1 train --model gpt-nano \
  --batch 4 --seq 32 --device cpu "${@:2}"; }
mpi 2 --steps 3 --dp 2 --metrics "$tmp/mpi2.jsonl" >"$tmp/log" 2>&1 || fail "mpirun -np 2: $(cat "$tmp/log")"
[ "$(losses "$tmp/dp2.jsonl")" = "$(losses "$tmp/mpi2.jsonl")" ] ||
  fail "mpirun -np 2 losses differ from the in-process dp 2's"
grep -q "over 2 MPI processes (dp 2 x tp 1 x pp 1)" "$tmp/log" || fail "an MPI run does not say so: $(cat "$tmp/log")"
train --steps 3 --tp 2 --pp 2 --device cpu --metrics "$tmp/tp2pp2.jsonl" 2>/dev/null || fail "tp 2 x pp 2"
mpi 4 --steps 3 --tp 2 --pp 2 --metrics "$tmp/mpi4.jsonl" --checkpoint "$tmp/mpi-ckpt" >"$tmp/log" 2>&1 ||
  fail "mpirun -np 4 --tp 2 --pp 2: $(cat "$tmp/log")"
[ "$(losses "$tmp/tp2pp2.jsonl")" = "$(losses "$tmp/mpi4.jsonl")" ] ||
  fail "mpirun -np 4 losses differ from the in-process tp 2 x pp 2's"
"$dlf" eval --checkpoint "$tmp/mpi-ckpt" --batches 1 | grep -q "validation loss" ||
  fail "eval of a checkpoint written under mpirun"
err=$(mpi 2 --steps 1 --devices 4 2>&1) && fail "mpirun with --devices 4 per process was accepted"
grep -q "processes x in-process devices are not supported" <<<"$err" || fail "hybrid refusal: $err"

# plan: GPT-3 175B over 1024 devices on meta devices
out=$("$dlf" plan --model gpt3-175b --devices 1024 --tp 8 --pp 8 --device sim:h100-80gb --batch 1536 --dtype bf16) ||
  fail "plan: $out"
grep -q "dp 16 x tp 8 x pp 8" <<<"$out" || fail "plan layout: $out"
grep -q "parameters .* GiB, gradients .* GiB, optimizer state .* GiB, activations" <<<"$out" ||
  fail "plan memory by category: $out"
grep -q "predicted .* tokens/s" <<<"$out" || fail "plan throughput: $out"
"$dlf" plan --model gpt-small --devices 8 --tp 2 --pp 2 --json | grep -q '"bench":"plan"' || fail "plan --json"
# every family plans data-parallel layouts from its own model; what does not fit says what would
for m in bert-mini vit-tiny unet-tiny; do
  out=$("$dlf" plan --model $m --devices 4) || fail "plan $m: $out"
  grep -q "dp 4, f32" <<<"$out" && grep -q "fits" <<<"$out" || fail "plan $m: $out"
done
expect_error 1 plan --model vit-tiny --devices 4 --tp 2
out=$("$dlf" plan --model gpt3-175b --devices 1024 --device sim:h100-80gb --batch 2048) ||
  fail "plan gpt3-175b: $out"
grep -q "if it fit: it does not" <<<"$out" && grep -q "fits on 1024 devices: --tp" <<<"$out" ||
  fail "plan gpt3-175b on 1024, dp only: $out"
out=$("$dlf" plan --model gpt3-175b --devices 64) || fail "plan gpt3-175b: $out"
grep -q "no dp x tp x pp layout of 64 devices fits" <<<"$out" || fail "plan gpt3-175b on 64: $out"
expect_error 1 plan --model gpt-small --devices 10 --tp 4
expect_error 1 plan --model gpt-small --devices 8 --tp 8
expect_error 1 plan --model gpt-small --devices 2 --device cpu
expect_error 2 plan --model gpt-small
# global options anywhere; an unknown option gets the closest known one; --version; help
"$dlf" demo --steps 1 --threads 1 | grep -q ", 1 threads" || fail "--threads after the command"
err=$("$dlf" train --stpes 3 2>&1 >/dev/null); [ $? -eq 2 ] || fail "--stpes: exit code"
[ "$err" = "dlf: unknown option --stpes (did you mean --steps?) (see dlf --help)" ] || fail "--stpes: $err"
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
echo "cli: all checks passed"
