#!/usr/bin/env bash
# dlf train --report: one self-contained HTML file with the run's figures, which headless
# Chromium renders (scripts/test.sh installs Debian's chromium).
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

# The labels of one axis (x or y) of the n-th figure, in order.
ticks() { awk -v RS='<svg class="figure"' -v n="$2" 'NR == n + 1' "$1" | grep -o "class=\"$3-tick\"[^<]*" | sed 's/.*>//'; }
# Round ticks (stdin): evenly spaced by 1, 2 or 5 x 10^k, each a multiple of that step, written
# with its decimals (none from 1 up, one for 0.1 to 0.5, ...).
round_ticks() {
  awk '{ v[NR] = $1; dot = index($1, "."); decimals[NR] = dot ? length($1) - dot : 0 }
    END {
      if (NR < 2) exit 1
      step = v[2] - v[1]
      split(sprintf("%.6e", step), e, "e")
      if (e[1] !~ /^[125]\.000000$/) exit 1
      for (i = 1; i <= NR; i++) {
        q = v[i] / step; r = q - int(q); if (r < 0) r = -r
        d = v[i] - v[i - 1] - step; if (d < 0) d = -d
        if ((r > 1e-6 && r < 1 - 1e-6) || (i > 1 && d > 1e-6 * step) ||
            decimals[i] != (e[2] < 0 ? -e[2] : 0)) exit 1
      }
    }'
}

# --zero 2 on one device: no replicas to shard over, and the flags row says so
train --steps 4 --eval-every 2 --zero 2 --report "$tmp/run.html" 2>"$tmp/log" ||
  fail "train --report: $(cat "$tmp/log")"
grep -q "report written to $tmp/run.html" "$tmp/log" || fail "no report line: $(cat "$tmp/log")"
html=$(cat "$tmp/run.html")
grep -Eq '(src|href)="?(https?:)?//' <<<"$html" && fail "the report loads something over the network"
[ "$(grep -o '<svg class="figure"' <<<"$html" | wc -l)" -eq 3 ] ||
  fail "expected 3 figures (loss, throughput, memory): $(grep -o '<h2>[^<]*' <<<"$html" | tr '\n' ' ')"
grep -q '<td>matmul</td>' <<<"$html" || fail "no matmul row in the op table"
grep -q 'validation loss' <<<"$html" || fail "no validation loss curve"
grep -q 'activations</text>' <<<"$html" || fail "the memory figure has no activations"
grep -q '<th>flags</th><td>precision fp32, recompute none, zero 0, offload none</td>' <<<"$html" ||
  fail "the flags row of a run that shards nothing: $(grep -o '<th>flags</th><td>[^<]*' <<<"$html")"
[ "$(ticks "$tmp/run.html" 1 x | xargs)" = "1 2 3 4" ] ||
  fail "the loss figure's steps are not 1 2 3 4: $(ticks "$tmp/run.html" 1 x | xargs)"
# on simulated devices the throughput figure has the simulated clock's too; dp 2 shards
train --steps 3 --devices 2 --device sim --zero 1 --report "$tmp/sim.html" 2>"$tmp/log" ||
  fail "train --report on sim devices: $(cat "$tmp/log")"
grep -q '<th>layout</th><td>dp 2 x tp 1 x pp 1' "$tmp/sim.html" && grep -q ', zero 1, ' "$tmp/sim.html" ||
  fail "the sim report's ZeRO-1 over dp 2: $(grep -o '<th>\(layout\|flags\)</th><td>[^<]*' "$tmp/sim.html")"
for page in run sim; do
  for figure in 1 2 3; do
    for axis in x y; do
      ticks "$tmp/$page.html" $figure $axis | round_ticks ||
        fail "$page.html, figure $figure: the $axis axis's ticks are not round: $(ticks "$tmp/$page.html" $figure $axis | xargs)"
    done
  done
done
grep -q '>simulated</text>' "$tmp/sim.html" || fail "no simulated throughput in the sim report"
grep -q '<td>a100-40gb</td>' "$tmp/sim.html" || fail "the sim report does not name the device"

browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || fail "chromium is not installed (bash scripts/test.sh installs it)"
for page in run sim; do
  dom=$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --dump-dom \
    "file://$tmp/$page.html" 2>/dev/null) || fail "chromium could not open $page.html"
  grep -q 'data-figures="3"' <<<"$dom" && grep -q 'data-rendered="3"' <<<"$dom" ||
    fail "chromium did not draw the 3 figures of $page.html: $(grep -o '<body[^>]*>' <<<"$dom")"
done

# a report that cannot be written is refused before the run
touch "$tmp/a-file"
expect_error 1 train --model gpt-nano --steps 1 --report "$tmp/a-file/run.html"
expect_error 1 train --model gpt-nano --steps 1 --report "$tmp"
echo "dlf train --report: all checks passed"
