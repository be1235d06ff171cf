#!/usr/bin/env bash
# dlf under a failing machine and a hostile user: full disks, signals, NaN, corrupt files, bad
# values, broken output, a frozen MPI rank. Each case would have failed before its fix.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"
# In the background: `exec`, so that $! is dlf's own pid (a signal to a subshell never reaches it).
train_bg() { exec "$dlf" --threads 1 train --model gpt-nano --batch 4 --seq 32 --until 5000 "$@"; }
lines_of() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
one_line() { [ "$(printf '%s\n' "$1" | wc -l)" -eq 1 ] || fail "$2: stderr is not one line: $1"; }

# --- a save that cannot be written leaves the previous checkpoint as it was ---------------------
train --steps 2 --checkpoint "$tmp/full" 2>/dev/null || fail "first training"
cp "$tmp/full/checkpoint.h5" "$tmp/good.h5"
err=$( (ulimit -f 100; train --steps 4 --checkpoint "$tmp/full" --resume) 2>&1 >/dev/null); code=$?
[ "$code" -eq 1 ] || fail "a save past ulimit -f: exit $code, expected 1: $err"
echo "$err" | grep -q "the previous checkpoint is unchanged" || fail "ulimit -f: $err"
cmp -s "$tmp/full/checkpoint.h5" "$tmp/good.h5" || fail "the failed save changed the checkpoint"
[ "$(ls "$tmp/full")" = "checkpoint.h5" ] || fail "a failed save left files behind: $(ls "$tmp/full")"
# On a real disk that fills up during the run (a tmpfs, where we may mount one): the save at the
# interrupt fails, the checkpoint stays as it was; a disk without room for the run's checkpoints
# is refused at step 0.
if [ "$(id -u)" -eq 0 ] && mkdir -p "$tmp/tiny" && mount -t tmpfs -o size=8m tmpfs "$tmp/tiny" 2>/dev/null; then
  train --steps 2 --checkpoint "$tmp/tiny/run" 2>/dev/null || { umount "$tmp/tiny"; fail "tmpfs: first save"; }
  cp "$tmp/tiny/run/checkpoint.h5" "$tmp/tiny.h5"
  train_bg --steps 100000 --checkpoint "$tmp/tiny/run" --resume --metrics "$tmp/fill.jsonl" 2>"$tmp/fill.log" &
  pid=$!
  for _ in $(seq 200); do [ "$(lines_of "$tmp/fill.jsonl")" -ge 2 ] && break; sleep 0.05; done
  dd if=/dev/zero of="$tmp/tiny/filler" bs=64k status=none 2>/dev/null
  kill -INT "$pid"; wait "$pid"; code=$?
  cmp -s "$tmp/tiny/run/checkpoint.h5" "$tmp/tiny.h5"; same=$?
  rm -f "$tmp/tiny/filler"
  err=$("$dlf" train --model gpt-mini --steps 2 --checkpoint "$tmp/tiny/big" 2>&1 >/dev/null); code_room=$?
  umount "$tmp/tiny"
  [ "$code" -eq 1 ] || fail "a full tmpfs: exit $code: $(cat "$tmp/fill.log")"
  grep -q "No space left on device.*the previous checkpoint is unchanged" "$tmp/fill.log" ||
    fail "tmpfs: $(cat "$tmp/fill.log")"
  [ "$same" -eq 0 ] || fail "the save on a full disk changed the checkpoint"
  [ "$code_room" -eq 1 ] && one_line "$err" "no room" || fail "no room for gpt-mini's checkpoints: exit $code_room: $err"
  echo "$err" | grep -q "free, and writing checkpoint.h5 needs" || fail "no room: $err"
else
  echo "reliability_test: cannot mount a tmpfs here; the full-disk case ran under ulimit -f only" >&2
fi
# The temporary file of a save whose process died is removed by the next save.
touch "$tmp/full/checkpoint.h5.tmp-999999999"
train --steps 3 --checkpoint "$tmp/full" --resume 2>/dev/null || fail "resume after the failed save"
[ ! -e "$tmp/full/checkpoint.h5.tmp-999999999" ] || fail "a dead save's temporary file was kept"

# --- a flipped byte in a tensor is found and named ----------------------------------------------
flip_byte() {  # flip_byte FILE OFFSET: xor one byte with 0x04, in place
  local byte
  byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((byte ^ 4)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# Inside the tensor data, past HDF5's headers.
flip_byte "$tmp/full/checkpoint.h5" $(($(stat -c %s "$tmp/full/checkpoint.h5") * 2 / 3))
err=$("$dlf" eval --checkpoint "$tmp/full" 2>&1 >/dev/null); code=$?
[ "$code" -eq 1 ] || fail "a corrupt checkpoint: exit $code: $err"
one_line "$err" "corrupt checkpoint"
echo "$err" | grep -q "tensor '.*' is corrupt" || fail "the corrupt tensor is not named: $err"

# --- SIGINT finishes the step, saves and exits 130; the run resumes where it would have been ----
train_bg --steps 100000 --checkpoint "$tmp/sig" --metrics "$tmp/sig.jsonl" 2>"$tmp/sig.log" &
pid=$!
for _ in $(seq 200); do [ "$(lines_of "$tmp/sig.jsonl")" -ge 3 ] && break; sleep 0.05; done
kill -INT "$pid"; wait "$pid"; code=$?
[ "$code" -eq 130 ] || fail "SIGINT: exit $code, expected 130: $(tail -3 "$tmp/sig.log")"
line=$(grep "interrupted by SIGINT after step" "$tmp/sig.log") || fail "no interrupt line: $(tail -3 "$tmp/sig.log")"
echo "$line" | grep -q "checkpoint saved to $tmp/sig" || fail "the interrupt line does not say where: $line"
n=$(echo "$line" | sed 's/.*after step \([0-9]*\).*/\1/')
train --steps 100000 --until $((n + 2)) --checkpoint "$tmp/sig" --resume --metrics "$tmp/sig.jsonl" 2>/dev/null ||
  fail "resume after SIGINT"
train --steps 100000 --until $((n + 2)) --metrics "$tmp/straight.jsonl" 2>/dev/null || fail "straight run"
[ "$(losses "$tmp/sig.jsonl")" = "$(losses "$tmp/straight.jsonl")" ] ||
  fail "interrupted + resumed losses differ from the straight run's"
# stopped_by SIGNAL EXIT NAME ARGS...: a run signalled after its third step saves, exits EXIT
# and its checkpoint loads. SIGTERM under two in-process ranks: every rank stops after the same
# step. SIGHUP, a closed terminal or ssh session, as SIGTERM.
stopped_by() {
  local signal=$1 exit=$2 name=$3; shift 3
  train_bg --steps 100000 --checkpoint "$tmp/$name" --metrics "$tmp/$name.jsonl" "$@" 2>"$tmp/$name.log" &
  pid=$!
  for _ in $(seq 200); do [ "$(lines_of "$tmp/$name.jsonl")" -ge 3 ] && break; sleep 0.05; done
  kill -"$signal" "$pid"; wait "$pid"; code=$?
  [ "$code" -eq "$exit" ] || fail "SIG$signal: exit $code, expected $exit: $(tail -3 "$tmp/$name.log")"
  grep -q "interrupted by SIG$signal after step .*checkpoint saved" "$tmp/$name.log" ||
    fail "SIG$signal: $(tail -3 "$tmp/$name.log")"
  "$dlf" eval --checkpoint "$tmp/$name" --batches 1 >/dev/null ||
    fail "the checkpoint saved on SIG$signal does not load"
}
stopped_by TERM 143 term --dp 2 --device cpu
stopped_by HUP 129 hup
# A second signal ends the run at once: no save.
exec_dlf() { exec "$dlf" "$@"; }
exec_dlf --threads 1 train --model gpt-mini --batch 8 --steps 100000 --until 200 \
  --checkpoint "$tmp/twice" --metrics "$tmp/twice.jsonl" 2>"$tmp/twice.log" &
pid=$!
for _ in $(seq 600); do [ -s "$tmp/twice.jsonl" ] && break; sleep 0.05; done
kill -INT "$pid"; sleep 0.2; kill -INT "$pid"; wait "$pid"; code=$?
[ "$code" -eq 130 ] || fail "two SIGINTs: exit $code, expected 130"
! grep -q "checkpoint saved" "$tmp/twice.log" || fail "two SIGINTs still saved: $(cat "$tmp/twice.log")"

# --- NaN is caught before it reaches the weights or a checkpoint --------------------------------
err=$(train --steps 6 --lr 1e9 --checkpoint "$tmp/nan" --save-every 1 2>&1 >/dev/null); code=$?
[ "$code" -eq 1 ] || fail "--lr 1e9: exit $code: $err"
echo "$err" | grep -q "step [0-9]*: the loss is .*stopped before updating the weights" || fail "NaN: $err"
[ -f "$tmp/nan/checkpoint.h5" ] || fail "the NaN guard lost the step-1 checkpoint"
# Weights that overflowed in the update are never saved.
err=$(train --steps 6 --lr 1e308 --checkpoint "$tmp/inf" --save-every 1 2>&1 >/dev/null); code=$?
[ "$code" -eq 1 ] || fail "--lr 1e308: exit $code: $err"
echo "$err" | grep -q "is not finite; not saved" || fail "--lr 1e308: $err"
[ ! -e "$tmp/inf/checkpoint.h5" ] || fail "non-finite weights were saved"
err=$(train --steps 5 --lr 1e9 --detect-anomaly 2>&1 >/dev/null)
echo "$err" | grep -q "detect_anomaly: op '[a-z_]*'" || fail "--detect-anomaly names no op: $err"

# --- bad values are refused up front, with one line naming the limit ----------------------------
for args in "--tp 65536 --pp 65536" "--devices 4096 --dp 4096" "--steps 99999999999999999999" \
  "--lr inf" "--lr nan" "--lr -1" "--min-lr -1" "--min-lr nan" "--weight-decay inf" \
  "--weight-decay -0.1" "--clip inf" "--batch 0" "--bucket-mb 9999999"; do
  # shellcheck disable=SC2086
  expect_error 2 train --model gpt-nano $args
done
expect_error 2 train --model gpt-nano --seed ''
expect_error 2 --threads 100000 demo --steps 1
expect_error 2 plan --model gpt-small --devices 2097152
err=$(DLF_NUM_THREADS=100000 "$dlf" demo --steps 1 2>&1 >/dev/null); [ $? -eq 1 ] || fail "DLF_NUM_THREADS=100000"
echo "$err" | grep -q "from 1 to 1024" || fail "DLF_NUM_THREADS: $err"
expect_error 1 plan --model gpt-small --devices 4 --tp 65536 --pp 65536
expect_error 1 train --model gpt-nano --steps 2 --save-every 1
expect_error 1 train --model gpt-nano --steps 2 --lr 1e-4 --min-lr 1e-3
train --steps 1 --lr 1e-5 2>/dev/null || fail "a small --lr with the default --min-lr"
touch "$tmp/a_file"
expect_error 1 train --model gpt-nano --steps 2 --checkpoint "$tmp/a_file"
mkfifo "$tmp/fifo"
timeout 20 "$dlf" train --model gpt-nano --steps 2 --data "$tmp/fifo" 2>"$tmp/fifo.log"; code=$?
[ "$code" -eq 1 ] || fail "--data FIFO: exit $code (124: it hung)"
grep -q "neither a regular file nor a folder" "$tmp/fifo.log" || fail "--data FIFO: $(cat "$tmp/fifo.log")"

# --- output that cannot be written is a failure ------------------------------------------------
"$dlf" eval --checkpoint "$tmp/sig" --batches 1 >/dev/full 2>"$tmp/full.log"; code=$?
[ "$code" -eq 1 ] || fail "eval > /dev/full: exit $code"
grep -q "writing the output failed" "$tmp/full.log" || fail "eval > /dev/full: $(cat "$tmp/full.log")"
train --steps 2 --metrics /dev/full 2>"$tmp/metrics.log"; code=$?
[ "$code" -eq 1 ] || fail "--metrics /dev/full: exit $code"
grep -q "writing the metrics file /dev/full failed" "$tmp/metrics.log" || fail "--metrics: $(cat "$tmp/metrics.log")"
# A reader that is gone before the text comes (`| true`, as `| head` once it has its lines).
"$dlf" generate --checkpoint "$tmp/sig" --tokens 500 2>"$tmp/pipe.log" | true
code=${PIPESTATUS[0]}
[ "$code" -eq 1 ] || fail "generate | true: exit $code (141: killed by SIGPIPE)"
grep -q "writing the output failed" "$tmp/pipe.log" || fail "generate | true: $(cat "$tmp/pipe.log")"

# --- replicas stay equal (--check-replicas) ----------------------------------------------------
"$dlf" --threads 2 train --model gpt-nano --batch 4 --seq 32 --steps 4 --dp 2 --device cpu \
  --check-replicas 1 2>/dev/null || fail "--check-replicas on equal replicas"

# --- MPI: ranks with different options are refused; a frozen rank ends the job -----------------
if command -v mpirun >/dev/null; then
  err=$(mpirun_as_root -np 1 "$dlf" train --model gpt-nano --steps 2 --batch 4 : \
    -np 1 "$dlf" train --model gpt-nano --steps 2 --batch 8 2>&1); code=$?
  [ "$code" -ne 0 ] || fail "MPI ranks with different --batch trained"
  echo "$err" | grep -q "started with different options" || fail "MPI --batch mismatch: $err"
  mpirun_as_root -np 2 "$dlf" --collective-timeout 3 train --model gpt-nano --batch 4 --seq 32 \
    --steps 100000 --until 20000 --metrics "$tmp/mpi.jsonl" >"$tmp/mpi.log" 2>&1 &
  job=$!
  for _ in $(seq 400); do [ "$(lines_of "$tmp/mpi.jsonl")" -ge 2 ] && break; sleep 0.05; done
  rank1=""
  for p in $(pgrep -f "dlf --collective-timeout 3 train"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$p
  done
  [ -n "$rank1" ] || { kill "$job"; fail "could not find MPI rank 1"; }
  kill -STOP "$rank1"
  for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then kill -CONT "$rank1"; kill "$job"; fail "a frozen MPI rank hung the job"; fi
  wait "$job"
  grep -q "collective watchdog: .* for rank 1" "$tmp/mpi.log" || fail "the watchdog did not name rank 1: $(tail -5 "$tmp/mpi.log")"
fi
echo "reliability_test: all cases passed"
