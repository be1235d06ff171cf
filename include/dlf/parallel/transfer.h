// Named tensors — a piece of a state dict — from one rank to another over send/recv, for a
// pipeline stage that hands its share of a checkpoint to the rank that writes it.
#pragma once
#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// Sends the names, dtypes, shapes and data of `tensors` to `dst`, which calls recv_named.
void send_named(Communicator& comm, const nn::NamedTensors& tensors, int dst);
/// What `src` sent with send_named, in order, on this rank's device.
nn::NamedTensors recv_named(Communicator& comm, int src);

}  // namespace dlf::parallel
