#!/usr/bin/env bash
# dlf train --report: one self-contained HTML file with the run's figures, which headless
# Chromium renders (scripts/test.sh installs Debian's chromium).
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" "$1"

train --steps 4 --eval-every 2 --report "$tmp/run.html" 2>"$tmp/log" ||
  fail "train --report: $(cat "$tmp/log")"
grep -q "report written to $tmp/run.html" "$tmp/log" || fail "no report line: $(cat "$tmp/log")"
html=$(cat "$tmp/run.html")
grep -Eq '(src|href)="?(https?:)?//' <<<"$html" && fail "the report loads something over the network"
[ "$(grep -o '<svg class="figure"' <<<"$html" | wc -l)" -eq 3 ] ||
  fail "expected 3 figures (loss, throughput, memory): $(grep -o '<h2>[^<]*' <<<"$html" | tr '\n' ' ')"
grep -q '<td>matmul</td>' <<<"$html" || fail "no matmul row in the op table"
grep -q 'validation loss' <<<"$html" || fail "no validation loss curve"
grep -q 'activations</text>' <<<"$html" || fail "the memory figure has no activations"
# on simulated devices the throughput figure has the simulated clock's too
train --steps 3 --devices 2 --device sim --report "$tmp/sim.html" 2>"$tmp/log" ||
  fail "train --report on sim devices: $(cat "$tmp/log")"
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
