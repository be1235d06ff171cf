// A tensor kept for backward, with the storage version it had when it was saved.
#pragma once
#include <memory>
#include <string>

#include <dlf/autograd/node.h>

namespace dlf::autograd {

class RecomputeRegion;

class SavedTensor {
 public:
  SavedTensor() = default;
  /// An op's own output is kept without its autograd link (which points back at the node
  /// that saves it, a cycle); unpack() restores the link.
  SavedTensor(const Tensor& t, bool is_output);
  /// Inside a checkpointed forward the tensor is not kept: a slot of the region stands for it.
  /// The saved tensor; a dlf::Error if it was released or changed in place since.
  Tensor unpack(const std::shared_ptr<Node>& owner, const std::string& op) const;
  /// Frees what it keeps; a slot that kept nothing stays usable (a node that saves nothing,
  /// such as the cast of a parameter shared by several micro-batches, may run again).
  void release() {
    if (!data_.defined() && !region_) return;
    data_ = Tensor();
    region_.reset();
    released_ = true;
  }
  bool defined() const { return data_.defined() || region_ || released_; }

 private:
  Tensor data_;
  std::shared_ptr<RecomputeRegion> region_;
  int slot_ = 0;
  bool is_output_ = false;
  bool released_ = false;
  int output_nr_ = 0;
  uint64_t version_ = 0;
};

}  // namespace dlf::autograd
