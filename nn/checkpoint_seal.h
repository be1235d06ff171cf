// The seal of a checkpoint file: checksums of every byte of it, kept in the HDF5 user block (the
// first bytes of the file, which HDF5 leaves to its user) and checked before HDF5 reads anything.
//
// Why before: HDF5 1.10 trusts the structures it parses; a damaged file can make it read past
// its buffers or crash (fuzzing found both). A file whose bytes all match their checksums is one
// dlf wrote, so HDF5 only ever parses intact files. Each tensor's bytes have their own checksum,
// so damage is reported by the tensor it hit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlf::nn::seal {

/// Where one tensor's bytes lie in the file, and their checksum.
struct Region {
  std::string label = {};  ///< "model/transformer.wte.weight"
  uint64_t offset = 0, size = 0, checksum = 0;
};

/// The user block to reserve (a power of two, at least 512 bytes) for the regions so labelled.
uint64_t user_block_size(const std::vector<std::string>& labels);

/// Writes the seal into the user block of `path`, a file HDF5 has written and closed: the
/// regions as given (their checksums computed from the tensors written there) and one checksum
/// of all the other bytes after the user block.
void write(const std::string& path, uint64_t user_block, std::vector<Region> regions);

/// Checks every byte of `path` against its seal; throws dlf::Error naming the damaged tensor, or
/// saying that the file's structure is damaged, truncated, or not sealed at all.
void verify(const std::string& path);

}  // namespace dlf::nn::seal
