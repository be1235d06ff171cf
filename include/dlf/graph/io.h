// Looking at a graph and keeping it: JSON (cereal) with its external bytes beside it, and DOT.
#pragma once
#include <string>

#include <dlf/graph/graph.h>

namespace dlf::graph {

/// Writes `g` as `path` (JSON: buffers, values, nodes with their ops' names and attributes,
/// arguments, results, gradients, the memory plan) and the bytes of its external buffers —
/// parameters and state as they are now — as `path` + ".safetensors". Both replace their files
/// whole.
void save(const Graph& g, const std::string& path);
/// Reads what save() wrote: a graph that runs without the code that captured it (its ops are
/// found by name). Its gradients go to parameters of its own, read from the safetensors file:
/// after a run, grads[i].param.grad(). A dlf::Error names the file and what is wrong — a graph
/// holding collectives among them: their groups live in the process that captured it.
Graph load(const std::string& path);

/// The graph as Graphviz DOT: an op per box (a fused node lists its ops), an edge per value, inputs
/// and results as ellipses, external reads folded into the node that reads them.
std::string to_dot(const Graph& g);

}  // namespace dlf::graph
