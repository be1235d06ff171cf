#!/usr/bin/env bash
# The peer's (libtorch's) training step by op, beside what `train_bench MODEL --profile` prints
# for dlf: builds a copy of ../shared/peer/bench.cpp with libtorch's profiler around the timed
# steps (the peer itself is left as it is), runs it through the peer's run.sh (its settings),
# and prints each op's self time per step, largest first.
#
#   bash bench/peer_op_profile.sh MODEL [STEPS] [ARGS...]      e.g. unet-small 5 --batch 8
#
# Env: PEER_DIR (default ../shared/peer beside this repository).
set -euo pipefail
model=${1:?usage: peer_op_profile.sh MODEL [STEPS] [ARGS...]}
steps=${2:-5}
shift $(($# < 2 ? $# : 2))
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
peer=${PEER_DIR:-$root/../shared/peer}
work=/tmp/dlf-peer-profile
mkdir -p "$work/src"
cp "$peer/CMakeLists.txt" "$work/src/"
# The timed steps run inside a RecordProfile, which writes a Chrome trace when it ends.
/usr/bin/python3 - "$peer/bench.cpp" "$work/src/bench.cpp" <<'EOF'
import sys
src = open(sys.argv[1]).read()
loop = "  for (int s = 0; s < warmup + steps; ++s) {\n"
body = loop + "    double t0 = now_ms();\n"
after = "  const double rss_train = vm_hwm_mib();\n"
for anchor in (body, after):
    if src.count(anchor) != 1:
        sys.exit(f"peer_op_profile: the peer's bench.cpp changed; cannot find {anchor.strip()!r}")
src = "#include <optional>\n#include <torch/csrc/autograd/profiler_legacy.h>\n" + src
src = src.replace(body, "  std::optional<torch::autograd::profiler::RecordProfile> profile;\n" + loop +
                  "    if (s == warmup) profile.emplace(std::getenv(\"PEER_TRACE\"));\n" +
                  body[len(loop):])
src = src.replace(after, "  profile.reset();\n" + after)
open(sys.argv[2], "w").write(src)
EOF
{
  cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$work/build" -j"$(nproc)"
} >/dev/null
PEER_TRACE=$work/trace.json PEER_BUILD=$work/build flock /tmp/bench.lock \
  "$peer/run.sh" "$model" --steps "$steps" --json "$@" >/dev/null 2>&1
# Self time: an op's span less the spans of the ops it called (nested spans on one thread).
/usr/bin/python3 - "$work/trace.json" "$steps" <<'EOF'
import collections, json, sys
events = json.load(open(sys.argv[1]))
events = events["traceEvents"] if isinstance(events, dict) else events
steps = int(sys.argv[2])
spans = collections.defaultdict(list)
for e in events:
    if e.get("ph") == "X":
        spans[e.get("tid")].append((float(e["ts"]), float(e["dur"]), e["name"]))
self_us, calls = collections.Counter(), collections.Counter()
for evs in spans.values():
    evs.sort(key=lambda s: (s[0], -s[1]))
    stack = []  # [end, name, child time]
    def close(until):
        while stack and stack[-1][0] <= until:
            end, name, child, dur = stack.pop()
            self_us[name] += dur - child
            if stack:
                stack[-1][2] += dur
    for ts, dur, name in evs:
        close(ts)
        stack.append([ts + dur, name, 0.0, dur])
        calls[name] += 1
    close(float("inf"))
total = sum(self_us.values())
print(f"{'op (self time)':40s} {'calls/step':>10s} {'ms/step':>9s} {'share':>7s}")
for name, us in self_us.most_common(25):
    print(f"{name:40s} {calls[name] / steps:10.0f} {us / 1e3 / steps:9.2f} {100 * us / total:6.1f}%")
print(f"{'total':40s} {'':10s} {total / 1e3 / steps:9.2f}")
EOF
