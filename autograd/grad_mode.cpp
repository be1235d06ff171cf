#include <dlf/autograd/grad_mode.h>
#include <dlf/autograd/node.h>

namespace dlf::autograd {
namespace {
thread_local bool enabled = true;
thread_local uint64_t sequence = 0;
}  // namespace

bool grad_enabled() { return enabled; }
void set_grad_enabled(bool e) { enabled = e; }
uint64_t next_sequence_nr() { return sequence++; }

}  // namespace dlf::autograd
