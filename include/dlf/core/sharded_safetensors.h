// Sharded safetensors, as Hugging Face's save_pretrained writes a large model: a directory of
// model-00001-of-0000N.safetensors files and model.safetensors.index.json, whose "weight_map"
// names each tensor's file and whose "metadata" gives "total_size" (the tensors' bytes).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include <dlf/core/safetensors.h>

namespace dlf {

/// The index's file name in a directory of shards.
inline constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";

/// Whether `path` is sharded safetensors: an index file (its name ends in .index.json) or a
/// directory holding model.safetensors.index.json.
bool is_sharded_safetensors(const std::string& path);

/// Reads the shards an index lists; `path` is the index or its directory. The tensors in the
/// index's order, the metadata of the first shard. A dlf::Error names the index and the fix for
/// a shard that is missing, a tensor listed in the index but absent from its shard, a tensor of a
/// shard that the index does not list, and a shard name that is not a file beside the index.
Safetensors load_sharded_safetensors(const std::string& path);

/// Writes `tensors` into directory `dir` (created) as save_pretrained does: shards filled in
/// order, each up to `max_shard_bytes` of tensor data (a larger tensor alone in its own), named
/// model-0000i-of-0000N.safetensors, every one with `metadata`, then the index. Tied tensors are
/// stored once, under their first name; shards of an earlier write that the new index does not
/// name are removed.
void save_sharded_safetensors(const std::string& dir, const NamedTensors& tensors,
                              uint64_t max_shard_bytes,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace dlf
