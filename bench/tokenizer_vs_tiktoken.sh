#!/usr/bin/env bash
# dlf's BPE encoding speed beside tiktoken's npm package (tiktoken's Rust compiled to
# WebAssembly), one thread each, on the same text: ROUNDS alternating runs of each (one process
# per run, each holding /tmp/bench.lock; a run times 3 encodings after one warm-up), then one
# JSON line per encoding with both medians over the rounds, the ratio, each side's CPU time, and
# the machine's load average before and after (on a shared machine, read the figures with it).
#
#   bash bench/tokenizer_vs_tiktoken.sh [ROUNDS] [FILE...]
#
# FILEs: the text, encoded as one (default: the fortunes corpus). Env: DLF_BUILD (default
# build/release), DLF_TOKENIZER_CACHE (default the cache scripts/reference_tokenizers.sh fills).
set -euo pipefail
rounds=${1:-3}
shift $(($# > 0 ? 1 : 0))
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DLF_BUILD:-$root/build/release}
cache="${DLF_TOKENIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dlf/npm}"
encodings=(gpt2 cl100k_base o200k_base)
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(find /usr/share/games/fortunes -type f ! -name '*.dat' ! -name '*.u8' | sort)
bash "$root/scripts/reference_tokenizers.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load_before=$(cut -d' ' -f1 /proc/loadavg)
for ((r = 1; r <= rounds; ++r)); do
  flock /tmp/bench.lock "$build/bench/tokenizer_bench" --warmup 1 --reps 3 \
    $(printf -- '--tokenizer %s ' "${encodings[@]}") --data "${files[@]}" | tee -a "$tmp/dlf" >&2
  flock /tmp/bench.lock node "$root/bench/tiktoken_speed.cjs" "$cache" 1 3 \
    "$(IFS=,; echo "${encodings[*]}")" "${files[@]}" | tee -a "$tmp/tiktoken" >&2
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
of() {  # of FILE ENCODING FIELD -> the median over the rounds
  grep "\"case\":\"$2 " "$1" | sed -n "s/.*\"$3\":\([0-9.eE+-]*\).*/\1/p" | median
}
for enc in "${encodings[@]}"; do
  case=$(grep -m1 "\"case\":\"$enc " "$tmp/dlf" | sed 's/.*"case":"\([^"]*\)".*/\1/')
  dlf=$(of "$tmp/dlf" "$enc" value) tiktoken=$(of "$tmp/tiktoken" "$enc" value)
  printf '{"bench":"tokenizer","case":"%s","impl":"dlf","threads":1,"metric":"throughput","value":%s,"unit":"MB/s","median_ms":%s,"cpu_median_ms":%s,"baseline_impl":"tiktoken-npm 1.0.22","baseline":%s,"ratio":%.3f,"baseline_cpu_median_ms":%s,"rounds":%d,"load_before":%s,"load_after":%s}\n' \
    "$case" "$dlf" "$(of "$tmp/dlf" "$enc" median_ms)" "$(of "$tmp/dlf" "$enc" cpu_median_ms)" \
    "$tiktoken" "$(echo "$dlf $tiktoken" | awk '{print $1 / $2}')" \
    "$(of "$tmp/tiktoken" "$enc" cpu_median_ms)" "$rounds" "$load_before" "$load_after"
done
