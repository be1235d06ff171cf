#!/usr/bin/env bash
# dlf profile: rank 0's ops as a table with the roofline bound, and the step's figures, on the
# cpu (wall clock, this CPU's measured peaks) and on simulated devices (their clock and peaks),
# for every family; a Chrome trace of a cpu run; dlf calibrate writes a spec a sim device runs
# on.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

out=$("$dlf" --threads 1 profile --model gpt-nano --batch 4 --seq 32 --steps 3 2>"$tmp/log") ||
  fail "profile: $(cat "$tmp/log")"
grep -q "2 steps profiled on rank 0 (wall-clock time)" <<<"$out" || fail "profile header: $out"
grep -Eq "^linear +[0-9]+ .* (compute|memory) " <<<"$out" || fail "no linear row with a bound: $out"
grep -Eq "^scaled_dot_product_attention " <<<"$out" || fail "no attention row: $out"
grep -q "per step: .* in ops .* outside them" <<<"$out" || fail "no per-step line: $out"
grep -q "MFU" <<<"$out" || fail "no MFU: $out"
# the other runs on simulated devices: no CPU to measure first
out=$("$dlf" profile --model gpt-nano --batch 4 --seq 32 --steps 3 --devices 2 --dp 2 --device sim \
  --by-shape 2>/dev/null) || fail "profile on sim"
grep -q "(simulated time); roofline of a100-40gb" <<<"$out" || fail "sim profile header: $out"
grep -q "exposed data-parallel communication" <<<"$out" || fail "sim: no exposed communication: $out"
grep -Eq "^linear \[2, 32, 64\] \[" <<<"$out" || fail "--by-shape rows: $out"
for m in bert-tiny vit-tiny unet-tiny; do
  out=$("$dlf" --threads 1 profile --model $m --batch 4 --steps 2 --device sim 2>"$tmp/log") ||
    fail "profile $m: $(cat "$tmp/log")"
  grep -q "per step:" <<<"$out" || fail "profile $m: $out"
done
out=$("$dlf" profile --model gpt-nano --batch 4 --seq 32 --steps 1 --device sim 2>/dev/null) ||
  fail "profile --steps 1"
grep -q "no step profiled" <<<"$out" || fail "one step, one skipped: $out"
expect_error 2 profile --model gpt-nano --skip -1
# --memory: what is alive at the peak, by op and block, and the timeline; counter tracks by
# category in the trace
out=$("$dlf" profile --model gpt-nano --batch 4 --seq 32 --steps 2 --device sim --memory \
  --trace "$tmp/memory.json" 2>/dev/null) || fail "profile --memory"
grep -q "^memory of sim at its peak, after op" <<<"$out" || fail "no memory snapshot: $out"
grep -Eq "activations +[0-9]+ +linear \(transformer\.h\.1\)" <<<"$out" || fail "no block rows: $out"
grep -q "<- peak" <<<"$out" || fail "no timeline: $out"
grep -q '"name":"memory: activations"' "$tmp/memory.json" || fail "no memory counter by category"

# --trace of a cpu run: valid trace-event JSON, each rank a compute and a comm track of wall-clock
# spans: steps, ops with FLOPs and bytes, the gradient allreduces; memory as a counter
train --steps 2 --devices 2 --dp 2 --device cpu --trace "$tmp/cpu.json" 2>"$tmp/log" ||
  fail "train --trace on cpu: $(cat "$tmp/log")"
/usr/bin/python3 - "$tmp/cpu.json" <<'PY' || fail "the cpu trace: $(head -c 2000 "$tmp/cpu.json")"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
spans = [e for e in events if e["ph"] == "X"]
assert spans and all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans), "spans need ts and dur"
assert all(isinstance(e[k], int) for e in spans for k in ("pid", "tid")), "ids are integers"
threads = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
assert {"rank 0 compute", "rank 1 compute", "rank 0 comm", "rank 1 comm"} <= threads, threads
names = [e["name"] for e in spans]
assert "step 1" in names and "step 2" in names, "steps"
assert any(n.startswith("linear [") for n in names), "ops with shapes"
assert any(n.startswith("allreduce dp") and "bytes" in e["args"] for e, n in zip(spans, names)), "allreduces"
assert all("flops" in e["args"] for e in spans if e["name"].startswith("linear")), "op args"
assert any(e["ph"] == "C" and e["name"] == "memory" for e in events), "memory counter"
PY

"$dlf" --threads 1 calibrate --out "$tmp/cpu.json" 2>"$tmp/log" || fail "calibrate: $(cat "$tmp/log")"
grep -q "matmul .* GFLOP/s f32" "$tmp/log" || fail "calibrate summary: $(cat "$tmp/log")"
grep -q '"peak_flops_f32"' "$tmp/cpu.json" || fail "calibrate spec: $(cat "$tmp/cpu.json")"
grep -q "attention .* kernels reach" "$tmp/log" || fail "calibrate's efficiency summary: $(cat "$tmp/log")"
grep -q '"normalisation": {' "$tmp/cpu.json" || fail "calibrate's efficiency table: $(cat "$tmp/cpu.json")"
# Kernels started cold (after the caches emptied) take longer: the calibration finds it so.
python3 - "$tmp/cpu.json" <<'PY' || fail "calibrate's cold starts: $(cat "$tmp/cpu.json")"
import json, sys
device = json.load(open(sys.argv[1]))["device"]
assert device["cold_bytes"] > 0, "cold_bytes"
assert max(e["cold_overhead"] for e in device["efficiency"].values()) > 0, "cold_overhead"
PY
train --steps 1 --device "sim:$tmp/cpu.json" 2>"$tmp/log" || fail "train on the calibrated spec: $(cat "$tmp/log")"
expect_error 1 --threads 1 calibrate --out "$tmp/cpu.json/under-a-file.json"
grep -q '"peak_flops_f32"' "$tmp/cpu.json" || fail "a failed calibrate damaged the spec it could not write under"
grep -q "on cpu (measured)" "$tmp/log" || fail "the calibrated device: $(cat "$tmp/log")"
# --compare: each op class's measured time beside what a sim device of the calibrated spec
# predicts, and the step's; with peaks no op comes near (1e30), an op's prediction is the spec's
# per-op overhead alone
out=$("$dlf" --threads 1 profile --model gpt-nano --batch 4 --seq 32 --steps 3 \
  --compare "sim:$tmp/cpu.json" 2>"$tmp/log") || fail "profile --compare: $(cat "$tmp/log")"
grep -q "^predicted by sim:cpu (measured)" <<<"$out" || fail "no comparison: $out"
for class in matmul attention normalisation element-wise optimizer "in ops" step; do
  grep -Eq "^$class +[0-9. ]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+%" <<<"$out" || fail "no $class row: $out"
done
# each class's ops beneath it, indented: the matmul class's linear and matmul, the optimizer's
# adam_update_
sed -n '/^matmul /,/^attention /p' <<<"$out" | grep -Eq "^  linear +[0-9.]+ +[0-9.]+ +[0-9.]+ +[-+]" ||
  fail "no linear row under matmul: $out"
sed -n '/^optimizer /,/^in ops /p' <<<"$out" | grep -Eq "^  adam_update_ +[0-9.]+ " ||
  fail "no adam_update_ row under optimizer: $out"
# every peak unbounded, no class overhead and no cold start: each op predicted at the launch
# overhead alone
sed -E 's/("(peak_flops_[a-z0-9]+|memory_bandwidth)"): [0-9.e+]+/\1: 1e30/; s/"overhead": [0-9.e+-]+/"overhead": 0.0/; s/"cold_bytes": [0-9.e+]+/"cold_bytes": 0.0/' \
  "$tmp/cpu.json" >"$tmp/unbounded.json"
overhead=$(sed -n 's/.*"launch_overhead": \([0-9.e+-]*\).*/\1/p' "$tmp/cpu.json" | head -1)
out=$("$dlf" --threads 1 profile --model gpt-nano --batch 4 --seq 32 --steps 3 \
  --compare "sim:$tmp/unbounded.json" 2>"$tmp/log") || fail "profile --compare: $(cat "$tmp/log")"
awk -v o="$overhead" '/^matmul / { found = 1; d = $4 - $2 * o * 1e3; ok = d < 0.0015 && d > -0.0015 }
  END { exit !(found && ok) }' <<<"$out" || fail "matmul predicted as calls x $overhead s: $out"
expect_error 1 profile --model gpt-nano --steps 2 --device sim --compare "sim:$tmp/cpu.json"
expect_error 1 profile --model gpt-nano --steps 2 --compare cpu
echo "ok"
