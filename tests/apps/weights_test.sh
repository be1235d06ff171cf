#!/usr/bin/env bash
# Weights that travel: dlf convert between checkpoints and safetensors (dlf's and GPT-2's names),
# dlf generate --weights and dlf train --init-from take either; bad files and flags get one line.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

train --steps 6 --checkpoint "$tmp/run" 2>"$tmp/log" || fail "train: $(cat "$tmp/log")"
"$dlf" convert "$tmp/run" "$tmp/dlf.safetensors" >/dev/null || fail "convert to safetensors"
"$dlf" convert "$tmp/run/checkpoint.h5" "$tmp/hf.safetensors" --names hf >/dev/null ||
  fail "convert to GPT-2 names"
"$dlf" convert "$tmp/hf.safetensors" "$tmp/back" >/dev/null || fail "convert GPT-2 names back"
grep -q '"h.0.attn.c_attn.weight":{"dtype":"F32","shape":\[64,192\]' "$tmp/hf.safetensors" ||
  fail "GPT-2 names: no transposed h.0.attn.c_attn.weight"
grep -q 'transformer.h.0.attn.c_attn.weight":{"dtype":"F32","shape":\[192,64\]' \
  "$tmp/dlf.safetensors" || fail "dlf names: no transformer.h.0.attn.c_attn.weight"
# Every form of the same weights generates the same text.
reference=$("$dlf" generate --checkpoint "$tmp/run" --prompt "Hi" --tokens 16 --seed 3)
for weights in "$tmp/dlf.safetensors" "$tmp/hf.safetensors" "$tmp/back" "$tmp/back/checkpoint.h5"; do
  got=$("$dlf" generate --weights "$weights" --prompt "Hi" --tokens 16 --seed 3) ||
    fail "generate --weights $weights"
  [ "$got" = "$reference" ] || fail "generate --weights $weights: '$got', the checkpoint: '$reference'"
done
# --init-from starts from the weights: both names give the same first loss, below a fresh start's.
for w in dlf hf; do
  train --steps 1 --init-from "$tmp/$w.safetensors" --metrics "$tmp/init-$w.jsonl" 2>"$tmp/log" ||
    fail "train --init-from $w: $(cat "$tmp/log")"
done
train --steps 1 --metrics "$tmp/fresh.jsonl" 2>/dev/null || fail "train"
same_losses "$tmp/init-dlf.jsonl" "$tmp/init-hf.jsonl" || fail "--init-from: the names change the loss"
awk -v a="$(losses "$tmp/init-dlf.jsonl")" -v b="$(losses "$tmp/fresh.jsonl")" 'BEGIN { exit !(a < b - 0.2) }' ||
  fail "--init-from: first loss $(losses "$tmp/init-dlf.jsonl") is not below a fresh start's $(losses "$tmp/fresh.jsonl")"
# A file that does not say its model needs --model; a wrong one is refused by name.
/usr/bin/python3 - "$tmp/dlf.safetensors" "$tmp/bare.safetensors" <<'PY' || fail "could not write a bare file"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
del header["__metadata__"]
text = json.dumps(header).encode()
text += b" " * (-(8 + len(text)) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
expect_error 1 convert "$tmp/bare.safetensors" "$tmp/x.safetensors"
[[ "$err" == *"--model"* ]] || fail "a bare file without --model: $err"
"$dlf" convert "$tmp/bare.safetensors" "$tmp/named.safetensors" --model gpt-nano >/dev/null ||
  fail "convert --model gpt-nano"
expect_error 1 convert "$tmp/bare.safetensors" "$tmp/x.safetensors" --model gpt-mini
[[ "$err" == *"shape"*"not gpt-mini's"* ]] || fail "weights of another model: $err"
expect_error 1 convert "$tmp/dlf.safetensors" "$tmp/x.safetensors" --model gpt-mini
[[ "$err" == *"holds a gpt-nano"* ]] || fail "--model against the file's own: $err"
expect_error 1 generate --weights "$tmp/bare.safetensors" --prompt hi
# Damaged input: one line, nothing written.
head -c 300 "$tmp/dlf.safetensors" >"$tmp/cut.safetensors"
expect_error 1 convert "$tmp/cut.safetensors" "$tmp/out.safetensors"
[[ "$err" == *"cut.safetensors"* ]] || fail "a cut file: $err"
[ ! -e "$tmp/out.safetensors" ] || fail "a failed convert wrote its output"
printf 'not weights' >"$tmp/junk.bin"
expect_error 1 convert "$tmp/junk.bin" "$tmp/out.safetensors"
expect_error 1 convert "$tmp/run" "$tmp/out" --names hf
expect_error 2 convert "$tmp/run" "$tmp/out.safetensors" --names pytorch
expect_error 2 convert "$tmp/run"
expect_error 2 generate --checkpoint "$tmp/run" --weights "$tmp/dlf.safetensors"
expect_error 2 train --init-from "$tmp/dlf.safetensors" --resume --checkpoint "$tmp/run"
expect_error 1 train --init-from "$tmp/dlf.safetensors" --model gpt-mini --steps 1
echo "ok"
