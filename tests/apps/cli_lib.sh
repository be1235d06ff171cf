#!/usr/bin/env bash
# What the command-line tests share: sourced with the dlf binary as $1.
set -u
dlf=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_error() {  # expect_error CODE ARGS...: exit code CODE and exactly one line on stderr
  local code=$1; shift
  err=$("$dlf" "$@" 2>&1 >/dev/null); got=$?
  [ "$got" -eq "$code" ] || fail "dlf $*: exit $got, expected $code: $err"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "dlf $*: stderr is not one line: $err"
  case "$err" in dlf:*) ;; *) fail "dlf $*: stderr does not start with 'dlf:': $err" ;; esac
}
# mpirun as root; LeakSanitizer (ASan builds) ignores what OpenMPI keeps until exit
# (tests/mpi/lsan.supp), whose stacks need the slow unwinder: only the MPI runs pay for it.
lsan_supp=$(cd "$(dirname "${BASH_SOURCE[0]}")/../mpi" && pwd)/lsan.supp
mpirun_as_root() {
  LSAN_OPTIONS=suppressions=$lsan_supp:print_suppressions=0:fast_unwind_on_malloc=0 \
    mpirun --allow-run-as-root --oversubscribe "$@"
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
train() { "$dlf" --threads 1 train --model gpt-nano --batch 4 --seq 32 "$@"; }
asan_build() { nm -D --undefined-only "$dlf" | grep -q __asan; }  # an AddressSanitizer build
sim_spec() {  # sim_spec NAME MEMORY_BYTES: a simulated device's spec JSON on stdout
  printf '%s\n' "{\"device\": {\"name\": \"$1\", \"memory_bytes\": $2, \"peak_flops_f64\": 1e12," \
    '"peak_flops_f32": 1e12, "peak_flops_bf16": 1e12, "memory_bandwidth": 1e11,' \
    '"launch_overhead": 0, "host_link": {"bandwidth": 1e10, "latency": 0},' \
    '"interconnect": {"bandwidth": 1e10, "latency": 0}, "topology": "ring", "node_size": 8,' \
    '"network": {"bandwidth": 1e10, "latency": 0}}}'
}
losses() { grep '"loss"' "$1" | sed 's/.*"loss":\([^,]*\).*/\1/'; }
norms() { grep '"grad_norm"' "$1" | sed 's/.*"grad_norm":\([^,]*\).*/\1/'; }
close() {  # close A B [TOLERANCE]: within TOLERANCE (1e-5) relative
  awk -v a="$1" -v b="$2" -v t="${3:-1e-5}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t * (a < 0 ? -a : a)) }'
}
same_losses() {  # same_losses A.jsonl B.jsonl [TOLERANCE]: every step's loss within 1e-5 relative
  paste <(losses "$1") <(losses "$2") | while read -r a b; do close "$a" "$b" "${3:-1e-5}" || exit 1; done
}
