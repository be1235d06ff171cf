// One operand of a cached oneDNN primitive: the tensor's own layout, the layout the primitive
// chose, and the reorder between them (built once, with the primitive).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <optional>

namespace dlf::kernels {

class OnednnOperand {
 public:
  enum class Role { input, output };

  OnednnOperand() = default;
  /// `user` describes the tensor's buffer (any strides); `inner` is what the primitive wants.
  OnednnOperand(const dnnl::memory::desc& user, const dnnl::memory::desc& inner, Role role);

  /// The input's values in the primitive's layout: its own buffer, or a reordered copy.
  dnnl::memory input(void* data, dnnl::stream& stream) const;
  /// Where the primitive writes: the output buffer itself, or a scratch buffer.
  dnnl::memory output(void* data) const;
  /// Moves what the primitive wrote into `data` (nothing to do when it wrote there directly).
  void finish_output(const dnnl::memory& written, void* data, dnnl::stream& stream) const;

 private:
  dnnl::memory::desc user_, inner_;
  std::optional<dnnl::reorder> reorder_;
};

}  // namespace dlf::kernels
