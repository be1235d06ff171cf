#!/usr/bin/env bash
# The dlf command line on a dp x tp x pp mesh, the other families, and MPI.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

# the references: one device, and two cpu ranks
train --steps 3 --metrics "$tmp/dp1.jsonl" 2>/dev/null || fail "train on one device"
train --steps 3 --devices 2 --device cpu --metrics "$tmp/dp2.jsonl" 2>/dev/null || fail "train on two ranks"
# dp x tp x pp: the mesh gives one device's losses; --devices alone plans the layout
train --steps 3 --dp 2 --tp 2 --pp 2 --device cpu --metrics "$tmp/mesh.jsonl" 2>"$tmp/log" ||
  fail "train --dp 2 --tp 2 --pp 2: $(cat "$tmp/log")"
grep -q "over 8 ranks (dp 2 x tp 2 x pp 2, 2 micro-batches of 1 (1F1B))" "$tmp/log" ||
  fail "mesh header: $(cat "$tmp/log")"
same_losses "$tmp/dp1.jsonl" "$tmp/mesh.jsonl" || fail "dp 2 x tp 2 x pp 2 losses differ from one device's"
# selective recompute on the mesh: the same arithmetic, bit for bit
train --steps 3 --dp 2 --tp 2 --pp 2 --device cpu --recompute selective \
  --metrics "$tmp/mesh-selective.jsonl" 2>"$tmp/log" || fail "mesh --recompute selective: $(cat "$tmp/log")"
[ "$(losses "$tmp/mesh.jsonl")" = "$(losses "$tmp/mesh-selective.jsonl")" ] ||
  fail "selective recompute on the mesh changed the losses"
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
# ZeRO-1 over the data-parallel group of a dp x tp x pp mesh: the same losses, bit for bit
train --steps 3 --devices 8 --dp 2 --tp 2 --pp 2 --device cpu --metrics "$tmp/m3.jsonl" \
  2>/dev/null || fail "dp2 tp2 pp2"
train --steps 3 --devices 8 --dp 2 --tp 2 --pp 2 --device cpu --zero \
  --metrics "$tmp/m3z.jsonl" 2>/dev/null || fail "dp2 tp2 pp2 --zero"
[ "$(losses "$tmp/m3.jsonl")" = "$(losses "$tmp/m3z.jsonl")" ] || fail "ZeRO-1 under tp and pp changed the losses"
expect_error 2 train --model gpt-nano --steps 1 --pp 2 --schedule zigzag
# the interleaved schedule: each rank two chunks of gpt-mini's six blocks, 1F1B's losses bit for
# bit (each parameter's micro-batches accumulate in the same order); dlf plan prices it
mini() { "$dlf" --threads 1 train --model gpt-mini --seq 32 --steps 2 --pp 2 --device cpu "$@"; }
mini --batch 4 --metrics "$tmp/mini-1f1b.jsonl" 2>/dev/null || fail "gpt-mini --pp 2"
mini --batch 4 --schedule interleaved --virtual-stages 2 --metrics "$tmp/mini-interleaved.jsonl" 2>"$tmp/log" ||
  fail "--schedule interleaved: $(cat "$tmp/log")"
grep -q "4 micro-batches of 1 (interleaved 1F1B, 2 virtual stages)" "$tmp/log" ||
  fail "interleaved header: $(cat "$tmp/log")"
[ "$(losses "$tmp/mini-1f1b.jsonl")" = "$(losses "$tmp/mini-interleaved.jsonl")" ] ||
  fail "interleaved losses differ from 1F1B's"
# with tp 2 each stage's two ranks send half the boundary and the receivers allgather it
mini --batch 4 --tp 2 --schedule interleaved --virtual-stages 2 --metrics "$tmp/mini-tp-interleaved.jsonl" \
  2>/dev/null || fail "--tp 2 --schedule interleaved"
same_losses "$tmp/mini-1f1b.jsonl" "$tmp/mini-tp-interleaved.jsonl" ||
  fail "tp 2 interleaved losses differ from 1F1B's"
mini --batch 8 --dp 2 --zero 3 --metrics "$tmp/mini-z3.jsonl" 2>/dev/null || fail "gpt-mini dp 2 pp 2 --zero 3"
mini --batch 8 --dp 2 --zero 3 --schedule interleaved --virtual-stages 2 \
  --metrics "$tmp/mini-z3-interleaved.jsonl" 2>/dev/null || fail "--zero 3 --schedule interleaved"
[ "$(losses "$tmp/mini-z3.jsonl")" = "$(losses "$tmp/mini-z3-interleaved.jsonl")" ] ||
  fail "interleaved losses under ZeRO-3 differ from 1F1B's"
"$dlf" plan --model gpt-mini --devices 2 --pp 2 --batch 8 --schedule interleaved --virtual-stages 3 \
  >"$tmp/plan" || fail "plan --schedule interleaved"
grep -q "interleaved 1F1B, 3 virtual stages" "$tmp/plan" || fail "interleaved plan: $(cat "$tmp/plan")"
grep -q "bubble 4 %" "$tmp/plan" || fail "interleaved bubble (1/3 over 8 1/3): $(cat "$tmp/plan")"
expect_error 1 train --model gpt-nano --steps 1 --pp 2 --schedule interleaved --virtual-stages 2
expect_error 1 train --model gpt-mini --steps 1 --pp 2 --schedule interleaved --virtual-stages 2 \
  --batch 4 --micro-batch 4
expect_error 1 train --model gpt-mini --steps 1 --pp 2 --virtual-stages 2
expect_error 2 train --model gpt-mini --steps 1 --pp 2 --virtual-stages 0
# ZeRO-2 and -3 over the data-parallel group of a dp x tp and of a dp x pp mesh: the same losses
# (the clipped norm adds the ranks' pieces in another order: equal to rounding; under pp the
# embedding tied across the first and last stage has a bucket, or unit, of its own, its gradient
# summed part by part); a ZeRO-3 checkpoint of either mesh resumes on one device
for mesh in tp pp; do
  train --steps 4 --devices 4 --dp 2 --$mesh 2 --device cpu --metrics "$tmp/d$mesh.jsonl" \
    2>/dev/null || fail "dp2 ${mesh}2"
  for zero in 2 3; do
    train --steps 4 --devices 4 --dp 2 --$mesh 2 --device cpu --zero "$zero" \
      --metrics "$tmp/d$mesh$zero.jsonl" 2>"$tmp/log" || fail "dp2 ${mesh}2 --zero $zero: $(cat "$tmp/log")"
    same_losses "$tmp/d$mesh.jsonl" "$tmp/d$mesh$zero.jsonl" || fail "ZeRO-$zero under $mesh changed the losses"
  done
  train --steps 4 --until 2 --devices 4 --dp 2 --$mesh 2 --device cpu --zero 3 \
    --checkpoint "$tmp/d${mesh}3-stopped" --metrics "$tmp/d${mesh}3-resumed.jsonl" 2>/dev/null ||
    fail "dp2 ${mesh}2 --zero 3 --until 2"
  "$dlf" --threads 1 train --checkpoint "$tmp/d${mesh}3-stopped" --resume \
    --metrics "$tmp/d${mesh}3-resumed.jsonl" 2>"$tmp/log" ||
    fail "resume a dp2 ${mesh}2 ZeRO-3 run on one device: $(cat "$tmp/log")"
  same_losses "$tmp/d${mesh}3.jsonl" "$tmp/d${mesh}3-resumed.jsonl" ||
    fail "ZeRO-3 under $mesh resumed on one device differs"
done
train --steps 3 --devices 8 --dp 2 --tp 2 --pp 2 --device cpu --zero 3 \
  --metrics "$tmp/m3z3.jsonl" 2>"$tmp/log" || fail "dp2 tp2 pp2 --zero 3: $(cat "$tmp/log")"
same_losses "$tmp/m3.jsonl" "$tmp/m3z3.jsonl" || fail "ZeRO-3 on the dp x tp x pp mesh changed the losses"
train --steps 4 --devices 4 --dp 2 --tp 2 --device cpu --zero 3 --recompute selective \
  --metrics "$tmp/dtp3-selective.jsonl" 2>"$tmp/log" || fail "dp2 tp2 --zero 3 --recompute selective"
[ "$(losses "$tmp/dtp3.jsonl")" = "$(losses "$tmp/dtp3-selective.jsonl")" ] ||
  fail "selective recompute under ZeRO-3 and tp changed the losses"

# BERT: masked LM on the same text, reporting masked-byte accuracy; dp 2 gives one device's
# losses (each replica's loss weighted by its share of the masked bytes); resume is exact
bert() { "$dlf" --threads 1 train --model bert-tiny --batch 8 --seq 64 "$@"; }
bert --steps 3 --metrics "$tmp/bert1.jsonl" 2>"$tmp/log" || fail "train bert-tiny: $(cat "$tmp/log")"
grep -q "validation loss .*, masked_accuracy 0\.[0-9]" "$tmp/log" || fail "no masked accuracy: $(cat "$tmp/log")"
bert --steps 3 --devices 2 --device cpu --metrics "$tmp/bert2.jsonl" 2>/dev/null || fail "bert dp 2"
same_losses "$tmp/bert1.jsonl" "$tmp/bert2.jsonl" || fail "bert dp=2 losses differ from one device's"
bert --steps 3 --devices 4 --dp 2 --tp 2 --device cpu --zero 3 --metrics "$tmp/bert-tp-z3.jsonl" \
  2>"$tmp/log" || fail "bert dp 2 x tp 2 --zero 3: $(cat "$tmp/log")"
same_losses "$tmp/bert1.jsonl" "$tmp/bert-tp-z3.jsonl" || fail "bert ZeRO-3 under tp differs from one device"
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
# a batch without a masked byte (one byte, masked with probability 0.15) is refused by name
"$dlf" --threads 1 train --model bert-tiny --batch 1 --seq 1 --steps 3 2>"$tmp/log" >/dev/null &&
  fail "bert trained on a batch with no masked byte"
grep -q "^dlf: BERT: training batch 1 has no masked position" "$tmp/log" ||
  fail "bert with no masked byte: $(cat "$tmp/log")"
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
expect_error 1 train --model vit-tiny --steps 1 --micro-batch 2  # micro-batches are GPT's
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
# an --out that cannot be written is refused before sampling (1000 steps would take a while)
expect_error 1 generate --checkpoint "$tmp/unet" --out /proc/dlf-x.png
echo "$err" | grep -q "^dlf: --out: cannot write in /proc" || fail "generate --out /proc: $err"

# MPI: one rank per process gives the in-process run's losses, bit for bit; checkpoints too
mpi() { mpirun_as_root -np "$1" "$dlf" --threads 1 train --model gpt-nano \
  --batch 4 --seq 32 --device cpu "${@:2}"; }
mpi 2 --steps 3 --dp 2 --metrics "$tmp/mpi2.jsonl" >"$tmp/log" 2>&1 || fail "mpirun -np 2: $(cat "$tmp/log")"
[ "$(losses "$tmp/dp2.jsonl")" = "$(losses "$tmp/mpi2.jsonl")" ] ||
  fail "mpirun -np 2 losses differ from the in-process dp 2's"
grep -q "over 2 MPI processes (dp 2 x tp 1 x pp 1)" "$tmp/log" || fail "an MPI run does not say so: $(cat "$tmp/log")"
# ZeRO-3 with pipeline stages over MPI processes: the in-process dp 2 x pp 2 run's losses
mpi 4 --steps 4 --dp 2 --pp 2 --zero 3 --metrics "$tmp/mpi4z3.jsonl" >"$tmp/log" 2>&1 ||
  fail "mpirun -np 4 --dp 2 --pp 2 --zero 3: $(cat "$tmp/log")"
[ "$(losses "$tmp/dpp3.jsonl")" = "$(losses "$tmp/mpi4z3.jsonl")" ] ||
  fail "ZeRO-3 under pp over MPI differs from the in-process run"
train --steps 3 --tp 2 --pp 2 --device cpu --metrics "$tmp/tp2pp2.jsonl" 2>/dev/null || fail "tp 2 x pp 2"
mpi 4 --steps 3 --tp 2 --pp 2 --metrics "$tmp/mpi4.jsonl" --checkpoint "$tmp/mpi-ckpt" >"$tmp/log" 2>&1 ||
  fail "mpirun -np 4 --tp 2 --pp 2: $(cat "$tmp/log")"
[ "$(losses "$tmp/tp2pp2.jsonl")" = "$(losses "$tmp/mpi4.jsonl")" ] ||
  fail "mpirun -np 4 losses differ from the in-process tp 2 x pp 2's"
"$dlf" eval --checkpoint "$tmp/mpi-ckpt" --batches 1 | grep -q "validation loss" ||
  fail "eval of a checkpoint written under mpirun"
err=$(mpi 2 --steps 1 --devices 4 2>&1) && fail "mpirun with --devices 4 per process was accepted"
grep -q "processes x in-process devices are not supported" <<<"$err" || fail "hybrid refusal: $err"
echo "cli on a mesh, every family, MPI: all checks passed"
