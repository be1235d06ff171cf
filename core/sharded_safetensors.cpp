#include <dlf/core/sharded_safetensors.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <dlf/device/atomic_file.h>
#include "core/json.h"

namespace dlf {
namespace fs = std::filesystem;
namespace {

std::string shard_name(size_t i, size_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i, n);
  return name;
}

bool is_shard_name(const std::string& name) {
  size_t i = 0, n = 0;
  int end = 0;
  return std::sscanf(name.c_str(), "model-%5zu-of-%5zu.safetensors%n", &i, &n, &end) == 2 &&
         size_t(end) == name.size();
}

fs::path index_path(const std::string& path) {
  return fs::is_directory(path) ? fs::path(path) / kSafetensorsIndex : fs::path(path);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  DLF_CHECK(in, "cannot open ", path.string(), ": sharded safetensors are a directory holding ",
            kSafetensorsIndex, " (or that file) and the shards it names");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The index's weight_map as (tensor, shard file) pairs, in its order.
std::vector<std::pair<std::string, std::string>> weight_map(const fs::path& index) {
  json::Value root;
  try {
    root = json::parse(read_text(index));
  } catch (const Error& e) {
    throw Error(index.string() + ": " + e.what());
  }
  const json::Value* map = root.find("weight_map");
  DLF_CHECK(map && map->kind == json::Value::Kind::object, index.string(),
            ": no \"weight_map\" object naming each tensor's shard");
  std::vector<std::pair<std::string, std::string>> out;
  for (const json::Member& m : map->members) {
    const std::string& file = m.value.text;
    DLF_CHECK(m.value.kind == json::Value::Kind::string && !file.empty() &&
                  fs::path(file).filename() == file && file != "..",
              index.string(), ": tensor '", m.name,
              "' is mapped to something other than a shard file beside the index");
    out.emplace_back(m.name, file);
  }
  return out;
}

}  // namespace

bool is_sharded_safetensors(const std::string& path) {
  return path.ends_with(".index.json") ||
         (fs::is_directory(path) && fs::exists(fs::path(path) / kSafetensorsIndex));
}

Safetensors load_sharded_safetensors(const std::string& path) {
  const fs::path index = index_path(path);
  const auto map = weight_map(index);
  // Each shard once, in the order the index first names it.
  std::vector<std::string> files;
  std::map<std::string, Safetensors> shards;
  for (const auto& [name, file] : map) {
    if (shards.count(file)) continue;
    const fs::path shard = index.parent_path() / file;
    DLF_CHECK(fs::exists(shard), index.string(), " puts '", name, "' in ", file,
              ", which is missing: copy every shard the index names beside it");
    files.push_back(file);
    shards.emplace(file, load_safetensors(shard.string()));
  }
  Safetensors out;
  if (!files.empty()) out.metadata = shards.at(files.front()).metadata;
  std::set<std::pair<std::string, std::string>> listed;
  std::set<std::string> names;
  for (const auto& [name, file] : map) {
    DLF_CHECK(names.insert(name).second, index.string(), " lists '", name, "' twice");
    const NamedTensors& tensors = shards.at(file).tensors;
    const auto it = std::find_if(tensors.begin(), tensors.end(),
                                 [&](const auto& named) { return named.first == name; });
    DLF_CHECK(it != tensors.end(), index.string(), " puts '", name, "' in ", file,
              ", which does not hold it: the shard and the index are of different saves");
    out.tensors.push_back(*it);
    listed.emplace(name, file);
  }
  for (const auto& [file, shard] : shards)
    for (const auto& [name, t] : shard.tensors)
      DLF_CHECK(listed.count({name, file}), file, " holds '", name, "', which ", index.string(),
                " does not list: the shard and the index are of different saves");
  return out;
}

void save_sharded_safetensors(const std::string& dir, const NamedTensors& tensors,
                              uint64_t max_shard_bytes,
                              const std::map<std::string, std::string>& metadata) {
  DLF_CHECK(max_shard_bytes > 0, "safetensors shards: the largest shard must hold some bytes");
  std::vector<NamedTensors> shards(1);
  std::set<const TensorImpl*> stored;
  uint64_t bytes = 0, total = 0;
  for (const auto& named : tensors) {
    DLF_CHECK(named.second.defined(), "safetensors: tensor '", named.first, "' is undefined");
    if (!stored.insert(named.second.impl()).second) continue;
    const uint64_t n = named.second.nbytes();
    if (!shards.back().empty() && bytes + n > max_shard_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(named);
    bytes += n;
    total += n;
  }
  fs::create_directories(dir);
  std::string index =
      "{\"metadata\":{\"total_size\":" + std::to_string(total) + "},\"weight_map\":{";
  std::set<std::string> written;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string file = shard_name(i + 1, shards.size());
    save_safetensors((fs::path(dir) / file).string(), shards[i], metadata);
    written.insert(file);
    for (const auto& [name, t] : shards[i]) {
      if (index.back() != '{') index += ',';
      index += json::quote(name) + ":" + json::quote(file);
    }
  }
  replace_file(fs::path(dir) / kSafetensorsIndex, "safetensors index", index + "}}\n");
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (is_shard_name(name) && !written.count(name)) fs::remove(entry.path());
  }
}

}  // namespace dlf
