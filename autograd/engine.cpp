// Runs the backward graph: nodes in reverse order of creation once all their gradients are in.
#include <dlf/autograd/backward.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/autocast.h>
#include <dlf/core/factory.h>
#include <dlf/core/memory_profile.h>
#include <dlf/core/ops/elementwise.h>

#include <map>
#include <queue>
#include <unordered_map>
#include <utility>

#include "autograd/graph_nodes.h"

namespace dlf::autograd {
namespace {

struct ByPriority {
  bool operator()(const Node* a, const Node* b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

thread_local const Node* running_node = nullptr;

struct RunningNode {
  const Node* previous;
  explicit RunningNode(const Node* node) : previous(std::exchange(running_node, node)) {}
  ~RunningNode() { running_node = previous; }
};

// Where grad() wants a gradient handed back instead of accumulated.
using Captures = std::map<std::pair<const Node*, int>, size_t>;

void accumulate(Tensor& slot, const Tensor& g) {
  if (g.defined()) slot = slot.defined() ? slot + g : g;
}

// Runs every node reachable from the roots. With captures, the gradients arriving at the
// captured slots are returned and leaves are left alone (autograd::grad); without, leaves
// accumulate (backward).
std::vector<Tensor> run(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads,
                        bool retain_graph, bool create_graph, const Captures* captures,
                        size_t num_captures) {
  GradModeGuard mode(create_graph);
  AutocastGuard no_autocast(std::nullopt);  // each backward computes in its forward's dtypes
  MemoryLabel label("backward");
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  {
    std::vector<Node*> stack;
    for (const Edge& e : roots) {
      if (!dependencies.contains(e.node.get())) {
        dependencies[e.node.get()] = 0;
        stack.push_back(e.node.get());
      }
    }
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges()) {
        if (!e.node) continue;
        auto [it, fresh] = dependencies.try_emplace(e.node.get(), 0);
        ++it->second;
        if (fresh) stack.push_back(e.node.get());
      }
    }
  }
  auto buffer = [&](Node* n) -> std::vector<Tensor>& {
    auto& b = buffers[n];
    if (b.empty()) b.resize(n->num_slots());
    return b;
  };
  for (size_t i = 0; i < roots.size(); ++i)
    accumulate(buffer(roots[i].node.get())[roots[i].slot], root_grads[i]);

  std::vector<Tensor> captured(num_captures);
  std::priority_queue<Node*, std::vector<Node*>, ByPriority> ready;
  for (const auto& [n, deps] : dependencies) {
    if (deps == 0) ready.push(n);
  }
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffer(node));
    buffers.erase(node);
    for (size_t s = 0; s < grads.size(); ++s) {
      for (auto& hook : node->slot_hooks()[s]) {
        if (!grads[s].defined()) continue;
        Tensor replaced = hook(grads[s]);
        if (replaced.defined()) grads[s] = replaced;
      }
      if (captures) {
        auto it = captures->find({node, static_cast<int>(s)});
        if (it != captures->end()) captured[it->second] = grads[s];
      }
    }
    const bool is_leaf = dynamic_cast<AccumulateGrad*>(node) != nullptr;
    std::vector<Tensor> input_grads;
    if (!(is_leaf && captures)) {
      RunningNode running(node);
      input_grads = node->apply(std::move(grads));
    }
    if (!retain_graph) node->release_saved();
    const auto& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      Node* next = edges[i].node.get();
      if (next == nullptr) continue;
      if (i < input_grads.size()) accumulate(buffer(next)[edges[i].slot], input_grads[i]);
      if (--dependencies[next] == 0) ready.push(next);
    }
  }
  return captured;
}

void collect_roots(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grads,
                   std::vector<Edge>& roots, std::vector<Tensor>& root_grads) {
  DLF_CHECK(grads.empty() || grads.size() == outputs.size(), "backward: ", grads.size(),
            " gradients for ", outputs.size(), " outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    DLF_CHECK(out.requires_grad(), "backward: output ", i, " of shape ", shape_str(out.shape()),
              " does not require grad (no input of the ops that made it requires grad)");
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      DLF_CHECK(out.numel() == 1,
                "backward: a gradient can be implied only for a one-element "
                "output, but output ",
                i, " has shape ", shape_str(out.shape()), "; pass one");
      g = ones_like(out);
    }
    DLF_CHECK(g.shape() == out.shape(), "backward: gradient of shape ", shape_str(g.shape()),
              " for an output of shape ", shape_str(out.shape()));
    roots.push_back(gradient_edge(out));
    root_grads.push_back(g);
  }
}

}  // namespace

const Node* running_backward_node() { return running_node; }

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grads,
              bool retain_graph, bool create_graph) {
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  collect_roots(outputs, grads, roots, root_grads);
  run(roots, root_grads, retain_graph, create_graph, nullptr, 0);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool create_graph) {
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  collect_roots(outputs, grad_outputs, roots, root_grads);
  Captures captures;
  std::vector<std::pair<size_t, size_t>> repeats;  // (input, the earlier input it repeats)
  for (size_t i = 0; i < inputs.size(); ++i) {
    DLF_CHECK(inputs[i].requires_grad(), "grad: input ", i, " does not require grad");
    Edge e = gradient_edge(inputs[i]);
    auto [it, added] = captures.emplace(std::make_pair(e.node.get(), e.slot), i);
    if (!added) repeats.emplace_back(i, it->second);
  }
  std::vector<Tensor> result =
      run(roots, root_grads, retain_graph || create_graph, create_graph, &captures, inputs.size());
  for (const auto& [i, first] : repeats) result[i] = result[first];
  return result;
}

}  // namespace dlf::autograd
