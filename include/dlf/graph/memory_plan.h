// Memory planning: every intermediate gets a byte offset in one arena, before anything runs.
#pragma once
#include <dlf/graph/graph.h>

namespace dlf::graph {

/// Gives each arena and output buffer an offset so that buffers alive at the same node never
/// overlap (alive: from the node that first writes it to the last that reads or writes any
/// value of it; an output to the end), biggest first, each into the smallest gap that holds it
/// (best fit); sets g.arena_bytes, the most the arena needs. Offsets are 64-byte aligned. An
/// element-wise op (OpDef::pointwise, not a fused chain) whose first input is an intermediate
/// it reads last, of its output's size and layout, writes its output over it (in place: the two
/// buffers get one offset); so does a fused product (fuse_epilogues) over its added tensor. The
/// buffers must share one device.
void plan_memory(Graph& g);

/// The bytes arena buffers would take if each (or each run of buffers written in place over
/// one another) had its own allocation alive for its whole lifetime, at the worst node: the
/// least any plan can reach (the plan's own figure is at least this).
size_t arena_lower_bound(const Graph& g);

}  // namespace dlf::graph
