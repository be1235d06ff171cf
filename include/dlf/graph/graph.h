// The graph IR: the ops a captured step dispatched, in order, over SSA values that live in
// buffers. A value is one tensor (shape, strides, offset, dtype) of one buffer; views and
// in-place ops give new values of their input's buffer, so aliasing is explicit.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dlf/core/op.h>

namespace dlf::graph {

/// Where a buffer's bytes come from when the graph runs.
enum class BufferKind {
  external,  ///< bytes that existed before the step (parameters, state), bound at capture
  argument,  ///< an input of the step, bound anew at each run
  arena,     ///< an intermediate: an offset in the one arena the memory plan sizes
  /// escapes the step (a result, a gradient): in the arena too, alive to the end of the run;
  /// each run's arena lives as long as something holds such a value (as a CUDA graph's pool)
  output,
};
std::string kind_name(BufferKind kind);  ///< "arena"

/// One allocation the step reads or writes.
struct Buffer {
  BufferKind kind = BufferKind::arena;    ///< where its bytes come from
  size_t nbytes = 0;                      ///< its size
  Device device = kCPU;                   ///< where it lives
  int64_t argument = -1;                  ///< argument: which input of the step
  int64_t offset = -1;                    ///< arena: its byte offset, once memory is planned
  std::shared_ptr<Storage> storage = {};  ///< external: the bytes
};

/// A tensor of the step: a strided view of a buffer.
struct Value {
  Shape shape = {};          ///< as the tensor was at capture
  Shape strides = {};        ///< in elements, as at capture
  int64_t offset = 0;        ///< in the buffer, in elements
  DType dtype = DType::f32;  ///< its element type
  int buffer = -1;           ///< the index of its buffer
  int producer = -1;         ///< the node that made it; -1: read from its buffer as captured
};

/// One op as dispatched. Input -1 is an undefined tensor (an absent bias).
struct Node {
  const OpDef* op = nullptr;      ///< what it runs
  Attrs attrs = {};               ///< as dispatched
  std::vector<int> inputs = {};   ///< value indices
  std::vector<int> outputs = {};  ///< value indices
};

/// A gradient the step leaves on a parameter: after a run, param.grad() is that value.
struct GradBinding {
  Tensor param = {};     ///< the parameter the gradient goes to
  int param_value = -1;  ///< the parameter's own value in the graph (an external read)
  int value = -1;        ///< the gradient's value
};

/// A captured step.
struct Graph {
  std::vector<Buffer> buffers;     ///< the bytes it reads and writes
  std::vector<Value> values;       ///< its tensors
  std::vector<Node> nodes;         ///< its ops, in the order they run
  std::vector<int> arguments;      ///< the value of each input of the step
  std::vector<int> outputs;        ///< the values the step returns
  std::vector<GradBinding> grads;  ///< the gradients it leaves on parameters
  size_t arena_bytes = 0;          ///< set by plan_memory()

  /// Node count, by kind: "412 nodes (96 views), 38 MiB arena".
  std::string summary() const;
  /// For each buffer, the last node reading or writing any value of it (-1: none); graph
  /// outputs and gradients count as read after the last node.
  std::vector<int> buffer_last_use() const;
  /// The first node writing each buffer (-1: none, an external or argument).
  std::vector<int> buffer_first_def() const;
  /// The buffers `node` writes in place: its in-place output's and those of the inputs it
  /// also writes (OpDef::also_writes).
  std::vector<int> written_in_place_by(const Node& node) const;
  /// For each buffer, whether an in-place op writes it.
  std::vector<bool> buffers_written_in_place() const;
  /// After a pass: puts the outputs of views and in-place ops in their (new) input's buffer,
  /// then drops values no node, output or gradient refers to and buffers no value lives in,
  /// renumbering the rest.
  void compact();
};

}  // namespace dlf::graph
