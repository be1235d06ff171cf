// Passes: each rewrites a Graph in place and keeps what it computes for the step's results,
// gradients and external writes unchanged.
#pragma once
#include <string>
#include <vector>

#include <dlf/graph/graph.h>

namespace dlf::graph {

/// Removes nodes whose values nothing needs: not a result, not a gradient, not read by a node
/// that is needed (nor a writer of bytes a needed node reads as they are, through a value no
/// node made), not a write into bytes the step does not own, not a collective (its peers wait
/// for it). Returns the nodes removed.
int eliminate_dead_code(Graph& g);

/// Merges nodes that compute the same thing — same op, attributes and input values, with no
/// in-place write to those inputs between them, no random draw and no collective — keeping the
/// first. Returns the nodes removed.
int eliminate_common_subexpressions(Graph& g);

/// Constant folding: nodes computed from no input of the step — factories (full, arange) and
/// pure ops over their results, not random nor collective — run once, now, and their values
/// become external bytes of the graph (on meta, shapes only). Returns the nodes removed.
int fold_constants(Graph& g);

/// Rematerialisation: a value made by a cheap op (at most 16 FLOPs an output element by its
/// cost formula: element-wise ops, normalisations; never a collective) and read again more than
/// 16 nodes after its previous read is made again just before that read, from inputs alive
/// there anyway and not written in place in between (a parameter is, by the optimizer's update,
/// only after backward's reads) — so its bytes are free in between (forward's activations,
/// between forward and backward). The results are the same bits. Returns the nodes added.
int rematerialize(Graph& g);

/// Epilogue fusion: a matmul, linear or conv2d whose output only an add
/// reads, beside a tensor of the same shape and dtype (a residual connection, a gradient summed
/// from two uses), becomes one node of its fused op (core's epilogue_add_op: "linear_add", ...):
/// where the product ran when the tensor is there already and unchanged until the add; else
/// where the add ran, when the product's inputs are unchanged and alive until then anyway. The
/// product's kernel adds the tensor as it writes its output (oneDNN's binary or sum post-op),
/// and the product alone never reaches memory. Returns the nodes removed.
int fuse_epilogues(Graph& g);

/// Element-wise fusion: chains of f32 element-wise ops of one output shape and layout, each
/// reading what an earlier one made, become one fused_elementwise node that runs them tile by
/// tile (each input read once, each output written once; the values in between never reach
/// memory), where the chain's last op ran. A chain ends where a node outside it reads one of its
/// values (that value becomes an output of the fused node) or writes in place bytes it read.
/// Results agree with the unfused ops' to rounding (the loops, not oneDNN, compute them).
/// Returns the nodes removed.
int fuse_elementwise(Graph& g);
/// For a node fuse_elementwise made: its ops in order, comma-separated ("add,gelu"); else "".
std::string fused_chain(const Node& node);

/// Gather prefetch: an async allgather (ZeRO-3's gather of a block's parameters) that nothing
/// computes between and its first use, after an earlier one of its group that gathers other
/// bytes, moves up to just before that earlier one's first use — no earlier than what makes its
/// input or writes it in place, nor than another collective of its group: each block's gather
/// overlaps the block before it, as FSDP's forward prefetch does eagerly (the step's first run,
/// which capture records, cannot prefetch). Returns the nodes moved.
int prefetch_gathers(Graph& g);

/// What one pass did.
struct PassReport {
  std::string pass;         ///< its name
  size_t nodes_before = 0;  ///< the graph's nodes before it
  size_t nodes_after = 0;   ///< and after
  double ms = 0;            ///< its own time
};

/// The default pipeline's passes, in the order optimize() runs them: "constant folding",
/// "common subexpressions", "dead code", "rematerialisation", "epilogue fusion", "element-wise
/// fusion", "gather prefetch".
const std::vector<std::string>& pass_names();
/// A dlf::Error listing the passes when a name is none of pass_names().
void check_pass_names(const std::vector<std::string>& names);

/// The default pipeline less the passes `skip` names (check_pass_names first).
std::vector<PassReport> optimize(Graph& g, const std::vector<std::string>& skip = {});

}  // namespace dlf::graph
