#!/usr/bin/env bash
# Every model family through every command: train on two devices (simulated and cpu ranks, the
# same validation loss), eval with the family's metric, generate what the family makes.
set -u
dlf=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
val() { grep "validation loss" "$1" | tail -1 | sed 's/.*validation loss \([0-9.]*\).*/\1/'; }

for model in gpt-nano llama-nano bert-tiny vit-tiny unet-tiny; do
  for device in sim cpu; do
    "$dlf" --threads 2 train --model "$model" --devices 2 --device "$device" --steps 2 --batch 4 \
      --eval-batches 1 --checkpoint "$tmp/$model-$device" 2>"$tmp/$model-$device.log" ||
      fail "$model --devices 2 --device $device: $(tail -2 "$tmp/$model-$device.log")"
  done
  [ -n "$(val "$tmp/$model-sim.log")" ] || fail "$model: no validation loss: $(cat "$tmp/$model-sim.log")"
  [ "$(val "$tmp/$model-sim.log")" = "$(val "$tmp/$model-cpu.log")" ] ||
    fail "$model: sim and cpu ranks differ: $(val "$tmp/$model-sim.log") vs $(val "$tmp/$model-cpu.log")"
done

# The family's recipe where the command line says nothing: ViT warms up over 100 steps (lr / 100
# at step 1), the others over 5 % of the steps (300 / 20 = 15).
for model in vit-tiny gpt-nano; do
  "$dlf" --threads 2 train --model "$model" --steps 300 --until 1 --batch 4 --eval-batches 1 \
    --checkpoint "$tmp/recipe-$model" --metrics "$tmp/recipe-$model.jsonl" 2>/dev/null ||
    fail "$model --until 1"
done
grep -q '"step":1,.*"lr":1e-05,' "$tmp/recipe-vit-tiny.jsonl" ||
  fail "vit-tiny: not 100 warm-up steps: $(head -1 "$tmp/recipe-vit-tiny.jsonl")"
grep -q '"step":1,.*"lr":6.66667e-05,' "$tmp/recipe-gpt-nano.jsonl" ||
  fail "gpt-nano: not 15 warm-up steps: $(head -1 "$tmp/recipe-gpt-nano.jsonl")"

out=$("$dlf" eval --checkpoint "$tmp/gpt-nano-cpu" --batches 2) || fail "eval gpt-nano"
echo "$out" | grep -q "gpt-nano: validation loss [0-9.]*, perplexity [0-9.]*, [0-9.]* bits per byte" ||
  fail "eval gpt-nano: $out"
out=$("$dlf" eval --checkpoint "$tmp/llama-nano-cpu" --batches 2) || fail "eval llama-nano"
echo "$out" | grep -q "llama-nano: validation loss [0-9.]*, perplexity [0-9.]*, [0-9.]* bits per byte" ||
  fail "eval llama-nano: $out"
out=$("$dlf" eval --checkpoint "$tmp/bert-tiny-cpu" --batches 2) || fail "eval bert-tiny"
echo "$out" | grep -q "bert-tiny: validation loss [0-9.]*, masked_accuracy 0\.[0-9]*" || fail "eval bert-tiny: $out"
out=$("$dlf" eval --checkpoint "$tmp/vit-tiny-cpu" --batches 2) || fail "eval vit-tiny"
echo "$out" | grep -q "vit-tiny: validation loss [0-9.]*, accuracy 0\.[0-9]*" || fail "eval vit-tiny: $out"
out=$("$dlf" eval --checkpoint "$tmp/unet-tiny-cpu" --batches 2) || fail "eval unet-tiny"
echo "$out" | grep -q "unet-tiny: validation loss [0-9.]* (2 batches of 4)" || fail "eval unet-tiny: $out"
# eval is the evaluation training ran: the same loss as the run's last line.
out=$("$dlf" eval --checkpoint "$tmp/bert-tiny-cpu" --batches 1)
[ "$(echo "$out" | sed 's/.*validation loss \([0-9.]*\).*/\1/')" = "$(val "$tmp/bert-tiny-cpu.log")" ] ||
  fail "eval differs from training's evaluation: $out vs $(val "$tmp/bert-tiny-cpu.log")"

out=$("$dlf" generate --checkpoint "$tmp/gpt-nano-cpu" --prompt "Hello" --tokens 8) || fail "generate gpt"
case "$out" in Hello*) ;; *) fail "generate gpt: $out" ;; esac
# Llama continues text as GPT does, and its KV cache gives the uncached tokens (greedy)
out=$("$dlf" generate --checkpoint "$tmp/llama-nano-cpu" --prompt "Hello" --prompt "Hi" \
  --temperature 0 --tokens 12) || fail "generate llama-nano"
[ "$(echo "$out" | head -1 | cut -c1-5)" = "Hello" ] && [ "$(echo "$out" | sed -n 2p | cut -c1-2)" = "Hi" ] ||
  fail "generate llama-nano: $out"
uncached=$("$dlf" generate --checkpoint "$tmp/llama-nano-cpu" --prompt "Hello" --prompt "Hi" \
  --temperature 0 --tokens 12 --no-cache) || fail "generate llama-nano --no-cache"
[ "$out" = "$uncached" ] || fail "llama-nano: the cache changed the text: $out / $uncached"
out=$("$dlf" generate --checkpoint "$tmp/bert-tiny-cpu" --prompt "The [MASK]at [MASK]at") || fail "fill-mask"
first=$(echo "$out" | head -1)
case "$first" in "The "?"at "?"at") ;; *) fail "fill-mask: the masks are not filled: $out" ;; esac
[ "$(echo "$out" | grep -c "^  \[MASK\] [12]:")" -eq 2 ] || fail "fill-mask: no candidates per mask: $out"
err=$("$dlf" generate --checkpoint "$tmp/bert-tiny-cpu" --prompt "no mask" 2>&1 >/dev/null)
echo "$err" | grep -q "has no \[MASK\]" || fail "fill-mask without a mask: $err"
out=$("$dlf" generate --checkpoint "$tmp/unet-tiny-cpu" --out "$tmp/s.png" --samples 4 \
  --sampling-steps 5 2>/dev/null) || fail "generate unet"
[ "$(head -c 8 "$tmp/s.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "unet: no PNG"
# 4 samples of 32x32 in 2 columns with 2-pixel gutters, enlarged 4x to be seen (128-pixel
# images): (2·(32+2)+2)·4 = 280 pixels square (IHDR's width and height)
[ "$(od -An -tu4 --endian=big -j16 -N8 "$tmp/s.png" | xargs)" = "280 280" ] ||
  fail "unet: the grid is not 280x280 pixels: $(od -An -tu4 --endian=big -j16 -N8 "$tmp/s.png" | xargs)"
echo "$out" | grep -q "written to $tmp/s.png (each 32x32 image enlarged 4x)" || fail "generate unet: $out"
err=$("$dlf" generate --checkpoint "$tmp/vit-tiny-cpu" 2>&1 >/dev/null)
[ $? -eq 1 ] && echo "$err" | grep -q "classifies images and generates nothing" || fail "generate vit: $err"
echo "families: all checks passed"
