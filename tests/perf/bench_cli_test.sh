#!/usr/bin/env bash
# dlf bench end to end: runs of a stand-in build over a repository's commits make a history
# whose regression at the newest commit `dlf bench check` names (exit 1; 0 without one, 2 on an
# error); a run killed midway leaves nothing; the dashboard draws in headless Chromium; the real
# suite runs a case.
source "$(dirname "${BASH_SOURCE[0]}")/../apps/cli_lib.sh" "$1"

# A repository of 9 commits, and a build of it whose bench/suite_bench is a stand-in printing
# FAKE_MS as every repetition's time (with a 1 % wobble), and hanging on the case FAKE_HANG.
repo=$tmp/repo
git init -q "$repo"
for i in 1 2 3 4 5 6 7 8 9; do
  GIT_COMMITTER_DATE="2026-11-1${i}T00:00:00+00:00" git -C "$repo" -c user.name=t \
    -c user.email=t@t commit -q --allow-empty -m "commit $i"
done
build=$tmp/build
mkdir -p "$build/bench"
echo "CMAKE_HOME_DIRECTORY:INTERNAL=$repo" >"$build/CMakeCache.txt"
cat >"$build/bench/suite_bench" <<'STANDIN'
#!/usr/bin/env bash
name=$2
if [ "$name" = "${FAKE_HANG:-}" ]; then echo $$ >"$FAKE_PIDFILE"; exec sleep 300; fi
v=${FAKE_MS:-1}
reps=$(awk -v v="$v" 'BEGIN { printf "%g,%g,%g,%g", v, v * 1.01, v * 0.99, v * 1.005 }')
echo "{\"bench\":\"op\",\"case\":\"$name\",\"impl\":\"dlf\",\"value\":1,\"unit\":\"GB/s\",\"reps_ms\":[$reps],\"reps_cpu_ms\":[$reps]}"
STANDIN
chmod +x "$build/bench/suite_bench"
commits=($(git -C "$repo" rev-list --reverse HEAD))
run_at() {  # run_at DB COMMIT_INDEX MS: one run of the group_norm case at that commit
  git -C "$repo" checkout -q "${commits[$2]}"
  FAKE_MS=$3 "$dlf" bench run --build "$build" --db "$1" --case group_norm --lock '' \
    >/dev/null 2>"$tmp/log" || fail "bench run at commit $2: $(cat "$tmp/log")"
}

"$dlf" bench run --list --tier quick | grep -q '^group_norm forward' || fail "no group_norm case listed"
"$dlf" bench run --list --tier full | grep -q '^softmax' || fail "the full tier has no softmax"

# 8 commits at 1 ms, the newest 30 % slower: a regression at the newest commit
for i in 0 1 2 3 4 5 6 7; do run_at "$tmp/slow.db" "$i" 1; done
cp "$tmp/slow.db" "$tmp/steady.db"
run_at "$tmp/slow.db" 8 1.3
"$dlf" bench check --db "$tmp/slow.db" >"$tmp/out" 2>&1
code=$?
[ "$code" -eq 1 ] || fail "check of a regression at the newest commit: exit $code: $(cat "$tmp/out")"
grep -q "^regression  group_norm forward f32 \[8,64,32,32\] g32 \[cpu_time\] ${commits[7]:0:12}..${commits[8]:0:12} +30.0 %.*<- the newest commit" "$tmp/out" ||
  fail "check does not name the regression with its commits and size: $(cat "$tmp/out")"
grep -q "over 9 runs" "$tmp/out" || fail "check does not count the runs: $(cat "$tmp/out")"
"$dlf" bench check --db "$tmp/slow.db" --metric time | grep -q '\[time\]' || fail "--metric time"

# the same at the newest commit: no regression (exit 0); then a change behind it: still 0
run_at "$tmp/steady.db" 8 1.0
"$dlf" bench check --db "$tmp/steady.db" >"$tmp/out" 2>&1 || fail "check of a steady history: exit $?: $(cat "$tmp/out")"
grep -q "^0 change points" "$tmp/out" || fail "a steady history has change points: $(cat "$tmp/out")"
git -C "$repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m "commit 10" --date 2026-11-20
commits+=("$(git -C "$repo" rev-parse HEAD)")
run_at "$tmp/slow.db" 9 1.3
"$dlf" bench check --db "$tmp/slow.db" >"$tmp/out" 2>&1 ||
  fail "check with the regression behind the newest commit: exit $?: $(cat "$tmp/out")"
grep -q "^regression " "$tmp/out" || fail "the earlier regression is still listed: $(cat "$tmp/out")"

# errors: exit 2 and one line
expect_error 2 bench check --db "$tmp/none.db"
head -c 4096 /dev/urandom >"$tmp/junk.db"
expect_error 2 bench check --db "$tmp/junk.db"
expect_error 2 bench check --db "$tmp/slow.db" --metric nonsense
expect_error 2 bench run --build "$tmp" --db "$tmp/x.db" --case group_norm --lock ''
expect_error 2 bench run --db "$tmp/x.db" --case no-such-case --lock ''

# a run killed while its second case runs leaves no row: the history has as many runs as before
FAKE_HANG="dispatch add f32 [16]" FAKE_PIDFILE=$tmp/hang.pid \
  "$dlf" bench run --build "$build" --db "$tmp/slow.db" --case group_norm --case dispatch --lock '' \
  >/dev/null 2>&1 &
runner=$!
for _ in $(seq 100); do [ -s "$tmp/hang.pid" ] && break; sleep 0.1; done
[ -s "$tmp/hang.pid" ] || fail "the run never reached its second case"
{
  kill -9 "$runner"
  wait "$runner"
} 2>/dev/null  # bash's "Killed" line
kill "$(cat "$tmp/hang.pid")"
"$dlf" bench check --db "$tmp/slow.db" | grep -q "over 10 runs" ||
  fail "a killed run left rows: $("$dlf" bench check --db "$tmp/slow.db" | tail -1)"

# the dashboard: a chart per case and metric (the three peaks and group_norm, wall and CPU time),
# drawn by Chromium
"$dlf" bench dashboard --db "$tmp/slow.db" --out "$tmp/page.html" 2>"$tmp/log" ||
  fail "dashboard: $(cat "$tmp/log")"
html=$(cat "$tmp/page.html")
grep -Eq '(src|href)="?(https?:)?//' <<<"$html" && fail "the dashboard loads something over the network"
charts=$(grep -o '<svg class="chart"' <<<"$html" | wc -l)
[ "$charts" -eq 8 ] || fail "expected 8 charts (4 cases x 2 metrics), got $charts"
grep -q 'class="change"' <<<"$html" || fail "the dashboard marks no change point"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || fail "chromium is not installed (bash scripts/test.sh installs it)"
dom=$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --user-data-dir="$tmp/chromium" --dump-dom "file://$tmp/page.html" 2>/dev/null) ||
  fail "chromium could not open the dashboard"
grep -q "data-charts=\"$charts\"" <<<"$dom" && grep -q "data-drawn=\"$charts\"" <<<"$dom" ||
  fail "chromium did not draw the $charts charts: $(grep -o '<body[^>]*>' <<<"$dom")"

# cases of programs the build lacks (a revision before them) are left out, each named with why
"$dlf" bench run --build "$build" --db "$tmp/lacking.db" --case "train bert-tiny bf16" \
  --case "allreduce f32 4 KiB" --lock '' >/dev/null 2>"$tmp/log" || fail "bench run: $(cat "$tmp/log")"
grep -q "left out: train bert-tiny bf16 batch 4x64: no $build/bench/suite_train_bench" "$tmp/log" &&
  grep -q "left out: allreduce f32 4 KiB 2 ranks mpi: no $build/bench/suite_comm_bench" "$tmp/log" ||
  fail "the cases left out are not named: $(cat "$tmp/log")"

# a build without the suite, and a suite whose every case fails: exit 2, no run kept
refused() {  # refused ARGS...: exit 2, the last line on stderr the error
  "$dlf" bench run "$@" >/dev/null 2>"$tmp/log" && fail "bench run $* succeeded"
  [ $? -eq 2 ] || fail "bench run $*: not exit 2"
  tail -1 "$tmp/log" | grep -q '^dlf: ' || fail "bench run $*: no error line: $(cat "$tmp/log")"
}
echo "CMAKE_HOME_DIRECTORY:INTERNAL=$repo" >"$tmp/repo/CMakeCache.txt"
refused --build "$tmp/repo" --db "$tmp/x.db" --lock ''
grep -q "no $tmp/repo/bench/suite_bench" "$tmp/log" || fail "no suite_bench not named: $(cat "$tmp/log")"
printf '#!/bin/sh\nexit 3\n' >"$build/bench/suite_bench"
refused --build "$build" --db "$tmp/slow.db" --case group_norm --lock ''
grep -q "every case was left out" "$tmp/log" || fail "the failed cases are not named: $(cat "$tmp/log")"
"$dlf" bench check --db "$tmp/slow.db" | grep -q "over 10 runs" || fail "a failed run left rows"

# the real suite, one case, into a history of its own (a build with the benchmarks only)
if [ ! -x "$(dirname "$dlf")/../bench/suite_bench" ]; then
  echo "dlf bench: all checks passed (the real suite skipped: no bench/suite_bench in this build)"
  exit 0
fi
"$dlf" bench run --tier quick --db "$tmp/real.db" --case dispatch --case "train gpt-nano bf16" \
  --case "allreduce f32 4 KiB 2 ranks" --reps 3 --lock '' >"$tmp/out" 2>"$tmp/log" ||
  fail "the real suite: $(cat "$tmp/log")"
for case in 'dispatch add f32 \[16\] ' 'train gpt-nano bf16 batch 8x64 .* tok/s .* of matmul_bf16' \
  'allreduce f32 4 KiB 2 ranks in-process .* us' 'allreduce f32 4 KiB 2 ranks mpi .* us'; do
  grep -q "^$case" "$tmp/out" || fail "no result of $case: $(cat "$tmp/out")"
done
grep -q '^peak bandwidth' "$tmp/out" || fail "no bandwidth peak: $(cat "$tmp/out")"
echo "dlf bench: all checks passed"
