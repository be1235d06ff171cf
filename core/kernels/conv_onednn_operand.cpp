#include "core/kernels/conv_onednn_operand.h"

#include "device/cpu/onednn_context.h"

namespace dlf::kernels {

OnednnOperand::OnednnOperand(const dnnl::memory::desc& user, const dnnl::memory::desc& inner,
                             Role role)
    : user_(user), inner_(inner) {
  if (user == inner) return;
  const dnnl::engine& e = cpu::engine();
  reorder_ = role == Role::input ? dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, inner))
                                 : dnnl::reorder(dnnl::reorder::primitive_desc(e, inner, e, user));
}

dnnl::memory OnednnOperand::input(void* data, dnnl::stream& stream) const {
  dnnl::memory user(user_, cpu::engine(), data);
  if (!reorder_) return user;
  dnnl::memory inner(inner_, cpu::engine());
  reorder_->execute(stream, user, inner);
  return inner;
}

dnnl::memory OnednnOperand::output(void* data) const {
  return reorder_ ? dnnl::memory(inner_, cpu::engine()) : dnnl::memory(user_, cpu::engine(), data);
}

void OnednnOperand::finish_output(const dnnl::memory& written, void* data,
                                  dnnl::stream& stream) const {
  if (!reorder_) return;
  dnnl::memory src = written, user(user_, cpu::engine(), data);
  reorder_->execute(stream, src, user);
}

}  // namespace dlf::kernels
