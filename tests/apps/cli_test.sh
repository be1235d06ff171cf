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
echo "cli: all checks passed"
