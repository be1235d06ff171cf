// A fast 64-bit checksum of bytes: what checkpoints store per tensor and what replicas compare
// (`dlf train --check-replicas`). Not cryptographic: it catches flipped bits and torn writes.
#pragma once
#include <cstddef>
#include <cstdint>

#include <dlf/core/tensor.h>

namespace dlf {

/// The checksum of `size` bytes.
uint64_t checksum64(const void* data, size_t size);
/// The checksum of a tensor's elements in row-major order (any strides; the device must hold
/// data).
uint64_t checksum64(const Tensor& tensor);

}  // namespace dlf
