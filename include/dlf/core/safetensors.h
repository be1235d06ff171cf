// safetensors (Hugging Face's format for weights): an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the tensors' bytes back to back.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include <dlf/core/named_tensors.h>

namespace dlf {

/// What a .safetensors file holds.
struct Safetensors {
  NamedTensors tensors = {};                         ///< in the order of their bytes in the file
  std::map<std::string, std::string> metadata = {};  ///< the header's "__metadata__"
};

/// Reads a .safetensors file, memory-mapped: a tensor whose bytes are aligned for its dtype is
/// a view of the mapping (copy-on-write, the file is never changed), others are copied. F16 is
/// widened to f32. Every rule of the reference reader is checked — header size (at most
/// 100 MB), JSON, known dtypes, offsets sorted, contiguous, within the file and equal to the
/// shape's bytes (overflow-checked), the whole file covered, no name twice — and a violation is
/// a dlf::Error naming the file and the tensor.
Safetensors load_safetensors(const std::string& path);
/// The same checks over bytes in memory; every tensor is a copy.
Safetensors parse_safetensors(std::string_view bytes);
/// Writes `tensors` (each on any device, any strides) as a .safetensors file, replacing `path`
/// atomically. A tensor listed under several names (tied weights) is stored once, under its
/// first name, as Hugging Face's save_model does. The header is padded to 8 bytes and the tensors
/// ordered by element size, largest first, so every tensor's bytes are aligned for its dtype.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace dlf
