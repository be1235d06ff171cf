// The in-process backend: N ranks on N threads of this process share memory, so a collective
// is a rendezvous where each rank reads its peers' buffers directly.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel::detail {

struct InProcessWorld {
  std::vector<std::unique_ptr<Communicator>> ranks;  ///< rank i runs on devices[i]
  /// Makes every rank that waits in a collective of this world (or of a group split from it)
  /// throw: one rank failed and the others must not wait for it forever.
  std::function<void()> abort;
};

InProcessWorld in_process_world(const std::vector<Device>& devices);

}  // namespace dlf::parallel::detail
