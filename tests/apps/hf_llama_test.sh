#!/usr/bin/env bash
# Hugging Face Llama weights: a trained llama-nano converted to LlamaForCausalLM's names in
# save_pretrained's shards generates the checkpoint's text and starts a run at its loss; damaged
# shards and bad sizes get one line.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

llama() { "$dlf" --threads 1 train --model llama-nano --batch 4 --seq 32 "$@"; }
llama --steps 6 --checkpoint "$tmp/run" 2>"$tmp/log" || fail "train: $(cat "$tmp/log")"
# 526 kB of tensors in shards of at most 150 kB: four files and the index.
"$dlf" convert "$tmp/run" "$tmp/hf" --names hf --max-shard-size 150KB >"$tmp/out" ||
  fail "convert to shards"
grep -q "in shards (Hugging Face LlamaForCausalLM names)" "$tmp/out" || fail "convert said: $(cat "$tmp/out")"
shards=$(ls "$tmp/hf" | grep -c '^model-0000[1-9]-of-00004\.safetensors$')
[ "$shards" -eq 4 ] || fail "expected 4 shards, got: $(ls "$tmp/hf")"
grep -q '"metadata":{"total_size":525568}' "$tmp/hf/model.safetensors.index.json" ||
  fail "the index's total_size: $(head -c 200 "$tmp/hf/model.safetensors.index.json")"
grep -q '"model.layers.1.self_attn.q_proj.weight":"model-0000[1-4]-of-00004.safetensors"' \
  "$tmp/hf/model.safetensors.index.json" || fail "the index does not map q_proj to a shard"
# The same text from the checkpoint, the shards' directory and their index.
reference=$("$dlf" generate --checkpoint "$tmp/run" --prompt "Hi" --tokens 16 --seed 3)
for weights in "$tmp/hf" "$tmp/hf/model.safetensors.index.json"; do
  got=$("$dlf" generate --weights "$weights" --prompt "Hi" --tokens 16 --seed 3) ||
    fail "generate --weights $weights"
  [ "$got" = "$reference" ] || fail "generate --weights $weights: '$got', the checkpoint: '$reference'"
done
# --init-from the shards starts where --init-from the checkpoint does.
llama --steps 1 --init-from "$tmp/run" --metrics "$tmp/ckpt.jsonl" 2>"$tmp/log" ||
  fail "train --init-from the checkpoint: $(cat "$tmp/log")"
llama --steps 1 --init-from "$tmp/hf" --metrics "$tmp/hf.jsonl" 2>"$tmp/log" ||
  fail "train --init-from the shards: $(cat "$tmp/log")"
[ "$(losses "$tmp/hf.jsonl")" = "$(losses "$tmp/ckpt.jsonl")" ] ||
  fail "--init-from: first loss $(losses "$tmp/hf.jsonl") from the shards, $(losses "$tmp/ckpt.jsonl") from the checkpoint"
# Back to one file, and shards again in one: the old shards go.
"$dlf" convert "$tmp/hf" "$tmp/one.safetensors" >/dev/null || fail "convert shards to one file"
"$dlf" convert "$tmp/one.safetensors" "$tmp/hf" --names hf --max-shard-size 2GB --overwrite >/dev/null ||
  fail "convert --max-shard-size 2GB --overwrite"
[ "$(ls "$tmp/hf")" = "$(printf 'model-00001-of-00001.safetensors\nmodel.safetensors.index.json')" ] ||
  fail "one shard: $(ls "$tmp/hf")"
# Refusals: replacing shards, a missing shard, sizes that are not sizes, shards in a file.
expect_error 1 convert "$tmp/run" "$tmp/hf" --names hf --max-shard-size 2GB
[[ "$err" == *"holds llama-nano weights"* ]] || fail "replacing shards: $err"
"$dlf" convert "$tmp/run" "$tmp/cut" --names hf --max-shard-size 150KB >/dev/null || fail "convert"
rm "$tmp/cut/model-00003-of-00004.safetensors"
expect_error 1 generate --weights "$tmp/cut" --prompt Hi
[[ "$err" == *"model-00003-of-00004.safetensors, which is missing"* ]] || fail "a missing shard: $err"
expect_error 2 convert "$tmp/run" "$tmp/x" --max-shard-size 2TBs
expect_error 2 convert "$tmp/run" "$tmp/x" --max-shard-size 0
expect_error 1 convert "$tmp/run" "$tmp/x.safetensors" --max-shard-size 2GB
[[ "$err" == *"shards go in a directory"* ]] || fail "shards in a file: $err"
echo "ok"
