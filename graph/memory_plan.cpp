// Best-fit offset assignment over buffer lifetimes (the "greedy by size" of TFLite's and
// ggml's graph allocators).
#include <dlf/graph/memory_plan.h>

#include <algorithm>

namespace dlf::graph {
namespace {

constexpr size_t kAlign = 64;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Interval {
  int buffer, first, last;
};

std::vector<Interval> arena_intervals(const Graph& g) {
  const std::vector<int> first = g.buffer_first_def(), last = g.buffer_last_use();
  std::vector<Interval> out;
  for (size_t b = 0; b < g.buffers.size(); ++b) {
    const BufferKind kind = g.buffers[b].kind;
    if ((kind != BufferKind::arena && kind != BufferKind::output) || first[b] < 0) continue;
    // What escapes stays to the end: its bytes are the arena's, kept as long as it is held.
    const int end = kind == BufferKind::output ? int(g.nodes.size()) : last[b];
    out.push_back({int(b), first[b], std::max(first[b], end)});
  }
  return out;
}

}  // namespace

void plan_memory(Graph& g) {
  std::vector<Interval> todo = arena_intervals(g);
  for (const Interval& i : todo)
    DLF_CHECK(g.buffers[i.buffer].device == g.buffers[todo[0].buffer].device,
              "plan_memory: the step's intermediates are on ",
              g.buffers[todo[0].buffer].device.str(), " and ", g.buffers[i.buffer].device.str(),
              "; one arena holds one device's");
  std::stable_sort(todo.begin(), todo.end(), [&](const Interval& a, const Interval& b) {
    return g.buffers[a.buffer].nbytes > g.buffers[b.buffer].nbytes;
  });
  struct Placed {
    size_t offset, size;
    int first, last;
  };
  std::vector<Placed> placed;
  size_t arena = 0;
  for (const Interval& i : todo) {
    const size_t size = aligned(g.buffers[i.buffer].nbytes);
    std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of buffers alive with it
    for (const Placed& p : placed)
      if (p.first <= i.last && i.first <= p.last) busy.emplace_back(p.offset, p.offset + p.size);
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin > cursor && begin - cursor >= size && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best == SIZE_MAX) best = cursor;  // after everything alive with it
    g.buffers[i.buffer].offset = int64_t(best);
    placed.push_back({best, size, i.first, i.last});
    arena = std::max(arena, best + size);
  }
  g.arena_bytes = arena;
}

size_t arena_lower_bound(const Graph& g) {
  const std::vector<Interval> intervals = arena_intervals(g);
  std::vector<size_t> at(g.nodes.size() + 1, 0);
  for (const Interval& i : intervals)
    for (int n = i.first; n <= i.last && n < int(at.size()); ++n)
      at[n] += aligned(g.buffers[i.buffer].nbytes);
  return at.empty() ? 0 : *std::max_element(at.begin(), at.end());
}

}  // namespace dlf::graph
