#!/usr/bin/env bash
# dlf's training throughput of a zoo model beside the peer's (PyTorch's C++ API, ../shared/peer), measured
# in the same session: ROUNDS alternating runs of each (one process per run, each holding
# /tmp/bench.lock), then one JSON line with the medians, the ratio and peak RSS of both.
#
#   bash bench/train_vs_peer.sh gpt-mini|vit-tiny|bert-mini|unet-small [ROUNDS] [STEPS] [ARGS...]
#
# ARGS go to both benchmarks (e.g. --batch 8); without them each runs the peer's default batch.
# `--precision bf16` goes to dlf only (the peer trains in fp32): dlf's line then also carries
# its ratio to dlf fp32, timed alternately in the same process (train_bench), and the host's
# bf16/f32 matmul ratio (gemm_bf16_over_f32, the median of train_bench's), what bf16 could gain.
# Env: PEER_DIR (default ../shared/peer beside this repository), DLF_BUILD (default
# build/release). The peer's fp32 GEMMs need OpenBLAS (libopenblas0-pthread): with Debian's
# reference BLAS behind libblas.so.3 it runs ~30x slower, which would flatter dlf.
# The peer's figures are in ../shared/peer/README.md; run this on a quiet machine.
set -euo pipefail
model=${1:?usage: train_vs_peer.sh MODEL [ROUNDS] [STEPS]}
rounds=${2:-3}
steps=${3:-5}
shift $(($# < 3 ? $# : 3))
precision=fp32 common=()
while (($#)); do
  if [ "$1" = --precision ]; then precision=${2:?--precision needs a value}; shift 2; else common+=("$1"); shift; fi
done
set -- "${common[@]}"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
peer=${PEER_DIR:-$root/../shared/peer}
build=${DLF_BUILD:-$root/build/release}
[ -x "$peer/run.sh" ] || { echo "train_vs_peer: no peer at $peer (set PEER_DIR)" >&2; exit 2; }
if ! readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 | grep -q openblas; then
  echo "train_vs_peer: libblas.so.3 is not OpenBLAS; installing libopenblas0-pthread" >&2
  apt-get install -y -qq libopenblas0-pthread >&2
fi

# glibc's malloc hands big blocks back to the kernel on free and faults them in again on the
# next step; in this KVM guest that doubled the peer's step time (vit-tiny 900 ms against 425,
# a third of it system time). Both run with the same malloc settings, the peer's best.
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824}

field() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
dlf_lines=() peer_lines=()
for ((r = 1; r <= rounds; ++r)); do
  dlf_lines+=("$(flock /tmp/bench.lock "$build/bench/train_bench" "$model" --steps "$steps" \
    --precision "$precision" "$@" 2>/dev/null)")
  peer_lines+=("$(flock /tmp/bench.lock "$peer/run.sh" "$model" --steps "$steps" --json "$@" 2>/dev/null)")
  echo "round $r: dlf ${dlf_lines[-1]}" >&2
  echo "round $r: peer ${peer_lines[-1]}" >&2
done
of() {  # of LINES FIELD -> median over the rounds
  local -n lines=$1
  printf '%s\n' "${lines[@]}" | field "$2" | median
}
dlf_tps=$(of dlf_lines value) peer_tps=$(of peer_lines throughput)
unit=$(printf '%s\n' "${dlf_lines[0]}" | sed -n 's/.*"unit":"\([^"]*\)".*/\1/p')
batch=$(printf '%s\n' "${dlf_lines[0]}" | field batch)
fp32_ratio=1 gemm_ratio=
if [ "$precision" != fp32 ]; then
  fp32_ratio=$(of dlf_lines ratio)
  gemm_ratio=",\"gemm_bf16_over_f32\":$(of dlf_lines gemm_bf16_over_f32)"
fi
printf '{"bench":"train","case":"%s","impl":"dlf","threads":2,"batch":%s,"precision":"%s","metric":"throughput","value":%s,"unit":"%s","median_ms":%s,"peak_rss_mib":%s,"mfu":%s,"fp32_ratio":%s%s,"baseline_impl":"libtorch fp32","baseline":%s,"ratio":%.3f,"baseline_peak_rss_mib":%s,"rss_ratio":%.3f,"rounds":%d,"steps":%d}\n' \
  "$model" "$batch" "$precision" "$dlf_tps" "$unit" "$(of dlf_lines median_ms)" "$(of dlf_lines peak_rss_mib)" \
  "$(of dlf_lines mfu)" "$fp32_ratio" "$gemm_ratio" "$peer_tps" "$(echo "$dlf_tps $peer_tps" | awk '{print $1 / $2}')" \
  "$(of peer_lines peak_rss_mib)" \
  "$(echo "$(of dlf_lines peak_rss_mib) $(of peer_lines peak_rss_mib)" | awk '{print $1 / $2}')" \
  "$rounds" "$steps"
