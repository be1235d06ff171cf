#!/usr/bin/env bash
# apps/examples/finetune_gpt: pretrain gpt-nano with dlf train, fine-tune it on another text with
# the example (its validation loss must fall and the saved weights reload to the same loss), in
# f32 and in bf16 mixed precision (dlf::AutocastGuard), and a mismatched model is one line and a
# non-zero exit.
set -euo pipefail
dlf=$1 example=$2 text=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$dlf" train --model gpt-nano --steps 30 --checkpoint "$tmp/pre" >"$tmp/log" 2>&1 ||
  fail "pretraining: $(cat "$tmp/log")"
"$example" gpt-nano "$tmp/pre" "$text" "$tmp/tuned" 40 >"$tmp/log" 2>&1 ||
  fail "fine-tuning: $(cat "$tmp/log")"
grep -q "saved to $tmp/tuned" "$tmp/log" || fail "no save: $(cat "$tmp/log")"
"$example" gpt-nano "$tmp/pre" "$text" "$tmp/tuned-bf16" 40 bf16 >"$tmp/log" 2>&1 ||
  fail "fine-tuning in bf16: $(cat "$tmp/log")"
grep -q "saved to $tmp/tuned-bf16" "$tmp/log" || fail "no bf16 save: $(cat "$tmp/log")"
if "$example" gpt-mini "$tmp/pre" "$text" "$tmp/other" 1 >"$tmp/log" 2>&1; then
  fail "gpt-nano weights loaded into gpt-mini"
fi
[ "$(wc -l <"$tmp/log")" -eq 1 ] && grep -q "transformer" "$tmp/log" || fail "mismatch: $(cat "$tmp/log")"
[ ! -e "$tmp/other" ] || fail "a failed fine-tune wrote its output"
echo "ok"
