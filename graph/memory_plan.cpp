// Best-fit offset assignment over buffer lifetimes (the "greedy by size" of TFLite's and
// ggml's graph allocators), with element-wise ops and fused products writing over an input that
// dies with them.
#include <dlf/core/ops/fused.h>
#include <dlf/graph/memory_plan.h>

#include <algorithm>
#include <numeric>

namespace dlf::graph {
namespace {

constexpr size_t kAlign = 64;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Bytes that buffers take in turn: one offset for all of them, alive from the first's first
// write to the last's last use.
struct Slot {
  std::vector<int> buffers;
  size_t size = 0;
  int first = 0, last = 0;
};

bool planned(const Buffer& b) {
  return b.kind == BufferKind::arena || b.kind == BufferKind::output;
}

bool same_dense_layout(const Value& a, const Value& b) {
  return a.shape == b.shape && a.strides == b.strides && a.dtype == b.dtype && a.offset == 0 &&
         b.offset == 0;
}

// The input whose bytes an op's kernel reads element by element before writing its output
// there: an element-wise op's first (oneDNN's in place included), a fused product's added
// tensor (oneDNN's sum post-op); -1 for any other op. Not a fused chain: a later member may
// read the input after an earlier one wrote over it.
int overwritable_input(const OpDef& op) {
  if (op.pointwise && !op.view && op.inplace < 0) return 0;
  return added_input(op);
}

// The buffer node `n` may write its output over (in place), or -1: its overwritable input's,
// when that is an intermediate the node reads last, of the output's size and layout.
int writes_over(const Graph& g, int n, const std::vector<int>& first,
                const std::vector<int>& last) {
  const Node& node = g.nodes[n];
  const int k = overwritable_input(*node.op);
  if (k < 0 || node.outputs.size() != 1 || int(node.inputs.size()) <= k || node.inputs[k] < 0)
    return -1;
  const Value& in = g.values[node.inputs[k]];
  const Value& out = g.values[node.outputs[0]];
  const Buffer& ib = g.buffers[in.buffer];
  const Buffer& ob = g.buffers[out.buffer];
  if (ib.kind != BufferKind::arena || !planned(ob) || in.buffer == out.buffer) return -1;
  if (last[in.buffer] != n || first[out.buffer] != n || ib.nbytes != ob.nbytes) return -1;
  for (int i = 0; i < int(node.inputs.size()); ++i)  // another operand of those bytes: no
    if (i != k && node.inputs[i] >= 0 && g.values[node.inputs[i]].buffer == in.buffer) return -1;
  return same_dense_layout(in, out) ? in.buffer : -1;
}

std::vector<Slot> arena_slots(const Graph& g) {
  const std::vector<int> first = g.buffer_first_def(), last = g.buffer_last_use();
  std::vector<int> slot_of(g.buffers.size(), -1);
  std::vector<Slot> slots;
  for (size_t b = 0; b < g.buffers.size(); ++b) {
    if (!planned(g.buffers[b]) || first[b] < 0) continue;
    // What escapes stays to the end: its bytes are the arena's, kept as long as it is held.
    const int end = g.buffers[b].kind == BufferKind::output ? int(g.nodes.size()) : last[b];
    slot_of[b] = int(slots.size());
    slots.push_back({.buffers = {int(b)},
                     .size = aligned(g.buffers[b].nbytes),
                     .first = first[b],
                     .last = std::max(first[b], end)});
  }
  for (int n = 0; n < int(g.nodes.size()); ++n) {
    const int over = writes_over(g, n, first, last);
    if (over < 0) continue;
    const int out = g.values[g.nodes[n].outputs[0]].buffer;
    Slot& into = slots[size_t(slot_of[over])];
    Slot& from = slots[size_t(slot_of[out])];
    into.buffers.insert(into.buffers.end(), from.buffers.begin(), from.buffers.end());
    into.last = std::max(into.last, from.last);
    for (int b : from.buffers) slot_of[b] = slot_of[over];
    from.buffers.clear();
  }
  std::erase_if(slots, [](const Slot& s) { return s.buffers.empty(); });
  return slots;
}

}  // namespace

void plan_memory(Graph& g) {
  std::vector<Slot> todo = arena_slots(g);
  for (const Slot& s : todo)
    for (int b : s.buffers)
      DLF_CHECK(g.buffers[b].device == g.buffers[todo[0].buffers[0]].device,
                "plan_memory: the step's intermediates are on ",
                g.buffers[todo[0].buffers[0]].device.str(), " and ", g.buffers[b].device.str(),
                "; one arena holds one device's");
  std::stable_sort(todo.begin(), todo.end(),
                   [](const Slot& a, const Slot& b) { return a.size > b.size; });
  struct Placed {
    size_t offset, size;
    int first, last;
  };
  std::vector<Placed> placed;
  size_t arena = 0;
  for (const Slot& s : todo) {
    std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of slots alive with it
    for (const Placed& p : placed)
      if (p.first <= s.last && s.first <= p.last) busy.emplace_back(p.offset, p.offset + p.size);
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin > cursor && begin - cursor >= s.size && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best == SIZE_MAX) best = cursor;  // after everything alive with it
    for (int b : s.buffers) g.buffers[b].offset = int64_t(best);
    placed.push_back({best, s.size, s.first, s.last});
    arena = std::max(arena, best + s.size);
  }
  g.arena_bytes = arena;
}

size_t arena_lower_bound(const Graph& g) {
  std::vector<size_t> at(g.nodes.size() + 1, 0);
  for (const Slot& s : arena_slots(g))
    for (int n = s.first; n <= s.last && n < int(at.size()); ++n) at[n] += s.size;
  return at.empty() ? 0 : *std::max_element(at.begin(), at.end());
}

}  // namespace dlf::graph
