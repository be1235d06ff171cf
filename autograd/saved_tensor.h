// A tensor kept for backward, with the storage version it had when it was saved.
#pragma once
#include <memory>
#include <string>

#include <dlf/autograd/node.h>

namespace dlf::autograd {

class SavedTensor {
 public:
  SavedTensor() = default;
  /// An op's own output is kept without its autograd link (which points back at the node
  /// that saves it, a cycle); unpack() restores the link.
  SavedTensor(const Tensor& t, bool is_output);
  /// The saved tensor; a dlf::Error if it was released or changed in place since.
  Tensor unpack(const std::shared_ptr<Node>& owner, const std::string& op) const;
  void release() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return data_.defined() || released_; }

 private:
  Tensor data_;
  bool is_output_ = false;
  bool released_ = false;
  int output_nr_ = 0;
  uint64_t version_ = 0;
};

}  // namespace dlf::autograd
