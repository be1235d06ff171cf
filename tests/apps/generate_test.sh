#!/usr/bin/env bash
# dlf generate on a GPT: a tokenizer's text from GPT-2-named weights, the key/value cache against
# recomputing, batched prompts, --stop, seeds, --tokens as --max-tokens; bad input gets one line.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

train --steps 300 --lr 3e-3 --checkpoint "$tmp/run" 2>"$tmp/log" || fail "train: $(cat "$tmp/log")"
"$dlf" convert "$tmp/run" "$tmp/hf.safetensors" --names hf >/dev/null || fail "convert"
# A tokenizer.json whose 256 tokens are the bytes under other ids (byte b is id 7b + 3 mod 256),
# and the same GPT-2-named weights with wte's rows moved to those ids: the pair computes what
# the byte-level model does, so its text is the checkpoint's, through the tokenizer both ways.
/usr/bin/python3 - "$tmp/hf.safetensors" "$tmp/moved.safetensors" "$tmp/tokenizer.json" <<'PY' ||
import json, struct, sys
src, dst, tok = sys.argv[1:]
data = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
entry = json.loads(data[8:8 + n])["wte.weight"]
assert entry["dtype"] == "F32" and entry["shape"][0] == 256
start = 8 + n + entry["data_offsets"][0]
row = entry["shape"][1] * 4
old = bytes(data[start:start + 256 * row])
new_id = lambda b: (7 * b + 3) % 256
for b in range(256):
    data[start + new_id(b) * row:start + (new_id(b) + 1) * row] = old[b * row:(b + 1) * row]
open(dst, "wb").write(data)
# GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for 256 + i.
shown = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
spell, extra = {}, 0
for b in range(256):
    if b in shown:
        spell[b] = chr(b)
    else:
        spell[b] = chr(256 + extra)
        extra += 1
json.dump({"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "vocab": {spell[b]: new_id(b) for b in range(256)},
                     "merges": []}}, open(tok, "w"))
PY
  fail "could not write the moved weights and their tokenizer"

gen() { "$dlf" generate --temperature 0 --max-tokens 40 "$@"; }
reference=$(gen --checkpoint "$tmp/run" --prompt "The cat") || fail "generate"
[ "${#reference}" -ge 40 ] || fail "generate printed too little: '$reference'"
got=$(gen --weights "$tmp/moved.safetensors" --tokenizer "$tmp/tokenizer.json" --prompt "The cat") ||
  fail "generate --tokenizer"
[ "$got" = "$reference" ] || fail "--tokenizer: '$got', the byte-level model: '$reference'"
# Within the context the cache changes nothing; --tokens is --max-tokens.
[ "$(gen --checkpoint "$tmp/run" --prompt "The cat" --no-cache)" = "$reference" ] ||
  fail "--no-cache differs from the cache"
[ "$("$dlf" generate --checkpoint "$tmp/run" --prompt "The cat" --temperature 0 --tokens 40)" = \
  "$reference" ] || fail "--tokens is not --max-tokens"
# Prompts of different lengths in one batch: each continues as it does alone, in order.
other=$(gen --checkpoint "$tmp/run" --prompt "Hi") || fail "generate Hi"
both=$(gen --checkpoint "$tmp/run" --prompt "The cat" --prompt "Hi") || fail "two prompts"
[ "$both" = "$reference"$'\n'"$other" ] || fail "two prompts: '$both'"
# --stop ends the text before its first match in the continuation.
continuation=${reference#The cat}
stop=${continuation:10:3}
got=$(gen --checkpoint "$tmp/run" --prompt "The cat" --stop "$stop" --stop "never seen")
[ "$got" = "The cat${continuation%%"$stop"*}" ] && [ "$got" != "The cat" ] ||
  fail "--stop '$stop': '$got'"
# Sampling: the same seed the same text, top-p included.
sample() { "$dlf" generate --checkpoint "$tmp/run" --prompt "The cat" --top-p 0.9 --temperature 1.2 "$@"; }
[ "$(sample --seed 4)" = "$(sample --seed 4)" ] || fail "--seed 4 twice gives two texts"
[ "$(sample --seed 4)" != "$(sample --seed 5)" ] || fail "--seed 4 and 5 give one text"

# One line for a prompt past the context, a tokenizer that is not the model's, a bad --top-p.
expect_error 1 generate --checkpoint "$tmp/run" --prompt "$(printf 'x%.0s' {1..70})"
[[ "$err" == *"70 tokens"*"context"* ]] || fail "a long prompt: $err"
"$dlf" tokenizer train --vocab 300 --data "$tmp/log" --min-frequency 1 --out "$tmp/big.json" \
  >/dev/null 2>&1 || fail "tokenizer train"
expect_error 1 generate --weights "$tmp/moved.safetensors" --tokenizer "$tmp/big.json"
[[ "$err" == *"tokens, but gpt-nano's vocabulary is 256"* ]] || fail "a bigger tokenizer: $err"
expect_error 1 generate --weights "$tmp/hf.safetensors" --tokenizer gpt2  # absent, or 50257 tokens
expect_error 1 generate --checkpoint "$tmp/run" --top-p 0
expect_error 2 generate --checkpoint "$tmp/run" --stop ""
echo "generate: all passed"
