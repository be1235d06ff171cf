#include <dlf/nn/checkpoint.h>

#include <filesystem>
#include <map>
#include <set>

#include <dlf/device/atomic_file.h>
#include "checkpoint_file.h"
#include "checkpoint_seal.h"
#include "hdf5_file.h"

namespace dlf::nn {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "dlf-checkpoint";
// Version 2: sealed (checkpoint_seal.h), and fixed-length text only (nothing on HDF5's global
// heap).
constexpr int64_t kVersion = 2;
constexpr size_t kMaxNamesBytes = size_t(64) << 20, kMaxConfigBytes = size_t(16) << 20;

fs::path file_in(const std::string& dir) { return fs::path(dir) / "checkpoint.h5"; }

// The tensors stored as datasets of a list: each once, a tied one (the same tensor under
// another name) linked to its first name.
std::map<const TensorImpl*, std::string> stored_once(const NamedTensors& tensors) {
  std::map<const TensorImpl*, std::string> first;
  for (const auto& [name, t] : tensors) first.try_emplace(t.impl(), name);
  return first;
}

// One group per tensor list; the names, in order, as newline-separated text in a byte dataset
// (HDF5 lists a group's members alphabetically). Where each tensor's bytes went, for the seal.
void write_tensors(h5::Writer& file, const std::string& group_name, const NamedTensors& tensors,
                   std::vector<seal::Region>& regions) {
  h5::Handle group = file.create_group(group_name);
  const std::map<const TensorImpl*, std::string> first = stored_once(tensors);
  std::string order;
  for (const auto& [name, t] : tensors) {
    DLF_CHECK(!name.empty() && name.find_first_of("/\n") == std::string::npos, "tensor name '",
              name, "' cannot be stored (empty, or has '/' or a newline)");
    order += name + "\n";
    if (const std::string& stored = first.at(t.impl()); stored != name) {
      file.link(group.id(), stored, name);
      continue;
    }
    const h5::Writer::Placed placed = file.write_tensor(group.id(), name, t);
    if (placed.size > 0) {
      regions.push_back(
          {group_name.substr(1) + "/" + name, placed.offset, placed.size, placed.checksum});
    }
  }
  group.close();
  file.write_bytes(file.root(), group_name + ".names", order);
}

NamedTensors read_tensors(const h5::Reader& file, const std::string& group_name) {
  const std::string order = file.read_bytes(file.root(), group_name + ".names", kMaxNamesBytes);
  h5::Handle group = file.open_group(group_name);
  NamedTensors out;
  std::set<std::string> seen;
  size_t begin = 0;
  for (size_t end; (end = order.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string name = order.substr(begin, end - begin);
    DLF_CHECK(!name.empty() && name.find('/') == std::string::npos && seen.insert(name).second,
              file.path(), ": the tensor list of ", group_name, " has a bad or repeated name '",
              name, "' (a damaged file?)");
    out.emplace_back(name, file.read_tensor(group.id(), name, group_name.substr(1) + "/" + name));
  }
  DLF_CHECK(begin == order.size(), file.path(), ": the tensor list of ", group_name,
            " is cut short (a damaged file?)");
  return out;
}

void write_file(const fs::path& path, const Checkpoint& ckpt) {
  std::vector<std::string> labels;
  for (const auto& [impl, name] : stored_once(ckpt.model)) labels.push_back("model/" + name);
  for (const auto& [impl, name] : stored_once(ckpt.optimizer))
    labels.push_back("optimizer/" + name);
  const uint64_t user_block = seal::user_block_size(labels);
  h5::Writer file(path.string(), user_block);
  file.write_string_attr(file.root(), "format", kFormat);
  file.write_int_attr(file.root(), "version", kVersion);
  file.write_int_attr(file.root(), "step", ckpt.step);
  file.write_int_attr(file.root(), "rng_seed", int64_t(ckpt.rng_seed));
  file.write_int_attr(file.root(), "rng_offset", int64_t(ckpt.rng_offset));
  file.write_bytes(file.root(), "config", ckpt.config);
  std::vector<seal::Region> regions;
  write_tensors(file, "/model", ckpt.model, regions);
  write_tensors(file, "/optimizer", ckpt.optimizer, regions);
  file.close();
  seal::write(path.string(), user_block, std::move(regions));
}

}  // namespace

bool checkpoint_exists(const std::string& dir) { return fs::is_regular_file(file_in(dir)); }

void save_checkpoint(const std::string& dir, const Checkpoint& ckpt) {
  save_checkpoint_file(file_in(dir), ckpt);
}

Checkpoint load_checkpoint(const std::string& dir) { return load_checkpoint_file(file_in(dir)); }

void save_checkpoint_file(const fs::path& path, const Checkpoint& ckpt) {
  replace_file(path, "checkpoint", [&](const fs::path& temp) { write_file(temp, ckpt); });
}

Checkpoint load_checkpoint_file(const fs::path& path) {
  DLF_CHECK(fs::is_regular_file(path), "no checkpoint at ", path.string(),
            fs::exists(path) ? " (it is not a regular file)" : "");
  const std::string name = path.string();
  seal::verify(name);  // before HDF5 parses a byte of it
  const h5::Reader file(name);
  DLF_CHECK(file.has_attr(file.root(), "version"), "checkpoint ", name,
            " is an HDF5 file but not a dlf checkpoint");
  const int64_t version = file.read_int_attr(file.root(), "version");
  DLF_CHECK(version == kVersion, "checkpoint ", name, " has format version ", version,
            "; this dlf reads version ", kVersion,
            version == 1 ? " (version 1 stored text that is unsafe to read: train it again)" : "");
  DLF_CHECK(file.read_string_attr(file.root(), "format", 64) == kFormat, "checkpoint ", name,
            " is an HDF5 file but not a dlf checkpoint");
  Checkpoint ckpt;
  ckpt.step = file.read_int_attr(file.root(), "step");
  ckpt.rng_seed = uint64_t(file.read_int_attr(file.root(), "rng_seed"));
  ckpt.rng_offset = uint64_t(file.read_int_attr(file.root(), "rng_offset"));
  ckpt.config = file.read_bytes(file.root(), "config", kMaxConfigBytes);
  ckpt.model = read_tensors(file, "/model");
  ckpt.optimizer = read_tensors(file, "/optimizer");
  return ckpt;
}

void restore_module(Module& module, const Checkpoint& ckpt) { module.load_state_dict(ckpt.model); }

NamedTensors read_hdf5_tensors(const std::string& path) {
  const h5::Reader file(path);
  NamedTensors tensors;
  for (const std::string& name : file.dataset_paths()) {
    std::string dotted = name;
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    tensors.emplace_back(dotted, file.read_any_tensor(name));
  }
  return tensors;
}

}  // namespace dlf::nn
