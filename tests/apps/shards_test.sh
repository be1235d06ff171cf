#!/usr/bin/env bash
# dlf tokenize writes token shards and dlf train --data SHARDS/ streams them: the same losses
# resumed mid-epoch and over two data-parallel ranks, a corpus several times a memory limit,
# and one error for shards of another tokenizer than the run's.
source "$(dirname "$0")/cli_lib.sh"

# A small corpus: 40000 bytes, 10 % held out; windows of 32 + 1 bytes at a stride of 32 make
# 1124 windows an epoch, 281 steps of 4. Steps 279 to 285 cross the first epoch's end.
head -c 40000 /usr/share/games/fortunes/computers >"$tmp/small.txt" || fail "no fortunes corpus"
out=$("$dlf" tokenize --data "$tmp/small.txt" --out "$tmp/shards" 2>"$tmp/progress") ||
  fail "tokenize: $out"
case "$out" in *"1 shards, 40000 tokens"*"hash 0000000000000000"*) ;;
  *) fail "tokenize's summary: $out" ;; esac
grep -q "tokenize: 1/1 files, 0.0/0.0 MB, 40000 tokens" "$tmp/progress" ||
  fail "tokenize's progress: $(cat "$tmp/progress")"
[ "$(stat -c %s "$tmp/shards/00000.tok")" -eq $((64 + 2 * 40000)) ] || fail "the shard's size"
expect_error 1 tokenize --data "$tmp/small.txt" --out "$tmp/shards"  # holds shards already

# Resumed mid-epoch (and across the epoch's end), training draws the same windows: every loss
# is the uninterrupted run's, bit for bit.
train --data "$tmp/shards" --steps 285 --metrics "$tmp/whole.jsonl" >/dev/null 2>&1 ||
  fail "train --data SHARDS"
train --data "$tmp/shards" --steps 285 --until 140 --checkpoint "$tmp/ck" >/dev/null 2>&1 ||
  fail "train --until 140"
train --data "$tmp/shards" --steps 285 --until 282 --checkpoint "$tmp/ck" --resume \
  --metrics "$tmp/resumed.jsonl" >/dev/null 2>&1 || fail "resume to 282"
train --data "$tmp/shards" --steps 285 --checkpoint "$tmp/ck" --resume \
  --metrics "$tmp/resumed.jsonl" >/dev/null 2>&1 || fail "resume to 285"
diff <(losses "$tmp/whole.jsonl" | tail -n 145) <(losses "$tmp/resumed.jsonl") >/dev/null ||
  fail "resumed losses differ from the uninterrupted run's"
# Two data-parallel ranks each read their own rows of the same batches.
train --data "$tmp/shards" --steps 285 --until 6 --devices 2 --dp 2 --metrics "$tmp/dp2.jsonl" \
  >/dev/null 2>&1 || fail "train --dp 2 --data SHARDS"
same_losses "$tmp/dp2.jsonl" <(head -n 6 "$tmp/whole.jsonl") 1e-5 ||
  fail "dp 2's losses are not dp 1's: $(losses "$tmp/dp2.jsonl" | tr '\n' ' ')"

# A 150 MB corpus, 300 MB of shards, under a 60 MB limit on the data segment (ulimit -d, which
# counts the heap and private writable maps but not a read-only file map): bytes read whole
# run out of memory, the shards train.
/usr/bin/python3 -c "
import sys
text = open('/usr/share/games/fortunes/fortunes', 'rb').read()
with open(sys.argv[1], 'wb') as f:
    for _ in range(150_000_000 // len(text) + 1): f.write(text)
" "$tmp/big.txt" || fail "could not write the big corpus"
"$dlf" tokenize --data "$tmp/big.txt" --out "$tmp/big" >/dev/null 2>&1 || fail "tokenize big"
limited() { (ulimit -d 60000 && train "$@" --steps 3 --eval-batches 1); }
# AddressSanitizer's shadow memory is private writable memory that ulimit -d counts.
if nm -D --undefined-only "$dlf" | grep -q __asan; then
  echo "shards_test: an ASan build: the memory-limited run is skipped"
else
  limited --data "$tmp/big.txt" >/dev/null 2>&1 && fail "the limit does not bind: bytes trained"
  limited --data "$tmp/big" >/dev/null 2>"$tmp/big.err" ||
    fail "train on shards under ulimit -d 60000: $(cat "$tmp/big.err")"
fi
rm -f "$tmp/big.txt"

# Shards of one tokenizer and a run of another (or of bytes) are one error, as is a tokenizer
# without shards or for a model that predicts no tokens. The model's vocabulary follows the
# tokenizer: gpt-nano embeds 300 tokens with a tokenizer of 300.
"$dlf" tokenizer train --vocab 300 --data "$tmp/small.txt" --out "$tmp/t300.json" >/dev/null &&
  "$dlf" tokenizer train --vocab 310 --data "$tmp/small.txt" --out "$tmp/t310.json" >/dev/null ||
  fail "tokenizer train"
"$dlf" tokenize --tokenizer "$tmp/t300.json" --data "$tmp/small.txt" --out "$tmp/t300" \
  >/dev/null 2>&1 || fail "tokenize --tokenizer"
expect_error 1 train --model gpt-nano --data "$tmp/t300" --tokenizer "$tmp/t310.json" --steps 1
case "$err" in *"made by a tokenizer of hash"*"t310.json"*) ;; *) fail "mismatch: $err" ;; esac
expect_error 1 train --model gpt-nano --data "$tmp/t300" --steps 1
case "$err" in *"but the run's ids are bytes"*) ;; *) fail "shards without --tokenizer: $err" ;; esac
expect_error 1 train --model gpt-nano --data "$tmp/shards" --tokenizer "$tmp/t300.json" --steps 1
case "$err" in *"made by bytes"*) ;; *) fail "bytes shards with --tokenizer: $err" ;; esac
expect_error 1 train --model gpt-nano --data "$tmp/small.txt" --tokenizer "$tmp/t300.json" \
  --steps 1
case "$err" in *"trains on token shards"*) ;; *) fail "--tokenizer on text: $err" ;; esac
expect_error 1 train --model vit-tiny --tokenizer "$tmp/t300.json" --steps 1
case "$err" in *"vit-tiny classifies images: it has no vocabulary"*) ;;
  *) fail "a tokenizer for a ViT: $err" ;; esac
train --data "$tmp/t300" --tokenizer "$tmp/t300.json" --steps 2 --checkpoint "$tmp/ck300" \
  >/dev/null 2>&1 || fail "gpt-nano with a tokenizer of 300 tokens"
"$dlf" convert "$tmp/ck300" "$tmp/t300.safetensors" >/dev/null || fail "convert ck300"
/usr/bin/python3 - "$tmp/t300.safetensors" <<'PY' || fail "gpt-nano's embedding is not 300 rows"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
assert header["transformer.wte.weight"]["shape"] == [300, 64], header["transformer.wte.weight"]
PY
"$dlf" generate --checkpoint "$tmp/ck300" --prompt "The" --max-tokens 3 >/dev/null 2>&1 ||
  fail "generate from the 300-token run"

# Tokenizers of 256 tokens, the bytes under other ids (byte b is id a b + c mod 256), fit
# gpt-nano: trained on their shards, the checkpoint records the tokenizer, dlf generate and
# dlf eval use it, and another one is refused.
/usr/bin/python3 - "$tmp" <<'PY' || fail "could not write the byte tokenizers"
import json, sys
# GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for 256 + i.
shown = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
spell, extra = {}, 0
for b in range(256):
    spell[b] = chr(b) if b in shown else chr(256 + extra)
    extra += b not in shown
for name, a, c in (("seven", 7, 3), ("five", 5, 1)):
    json.dump({"version": "1.0", "added_tokens": [], "normalizer": None,
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                                 "use_regex": True},
               "decoder": {"type": "ByteLevel"},
               "model": {"type": "BPE", "merges": [],
                         "vocab": {spell[b]: (a * b + c) % 256 for b in range(256)}}},
              open(f"{sys.argv[1]}/{name}.json", "w"))
PY
"$dlf" tokenize --tokenizer "$tmp/seven.json" --data "$tmp/small.txt" --out "$tmp/seven" \
  >/dev/null 2>&1 || fail "tokenize --tokenizer seven.json"
[ "$(stat -c %s "$tmp/seven/00000.tok")" -eq $((64 + 2 * 40000)) ] || fail "seven's shard size"
train --data "$tmp/seven" --tokenizer "$tmp/seven.json" --steps 4 --checkpoint "$tmp/ck7" \
  --metrics "$tmp/seven.jsonl" >/dev/null 2>&1 || fail "train --tokenizer seven.json"
# The ids are the bytes' permuted, and the model learns alike (an embedding row's name apart).
[ "$(losses "$tmp/seven.jsonl" | wc -l)" -eq 4 ] || fail "seven's losses"
"$dlf" eval --checkpoint "$tmp/ck7" >/dev/null 2>&1 || fail "eval of the tokenizer's run"
got=$("$dlf" generate --checkpoint "$tmp/ck7" --prompt "The cat" --max-tokens 5 \
  --temperature 0 2>&1) || fail "generate with the checkpoint's tokenizer: $got"
case "$got" in "The cat"*) ;; *) fail "generate did not decode through the tokenizer: $got" ;; esac
expect_error 1 generate --checkpoint "$tmp/ck7" --tokenizer "$tmp/five.json" --prompt "a"
case "$err" in *"five.json"*"not the tokenizer the checkpoint was trained with"*"seven.json"*) ;;
  *) fail "generate with another tokenizer: $err" ;; esac
expect_error 1 train --data "$tmp/seven" --tokenizer "$tmp/five.json" --steps 8 \
  --checkpoint "$tmp/ck7" --resume --model gpt-nano --batch 4 --seq 32
case "$err" in *"--resume"*"--tokenizer"*"seven.json"*) ;; *) fail "resume with another: $err" ;;
esac
expect_error 1 eval --checkpoint "$tmp/ck7" --data "$tmp/shards"
case "$err" in *"made by bytes"*"seven.json"*) ;; *) fail "eval on bytes shards: $err" ;; esac
echo "shards_test: ok"
