#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlf/core/safetensors.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>

#include <dlf/device/atomic_file.h>
#include "core/json.h"

namespace dlf {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's cap
constexpr size_t kMaxRank = 64;

// The reference's dtypes: those dlf computes in, F16 (widened to f32 on reading), and the rest
// (known, but refused by name).
struct FileDType {
  const char* name;
  size_t bytes;
  std::optional<DType> dtype;
};
constexpr FileDType kFileDTypes[] = {
    {"BOOL", 1, DType::b8},   {"U8", 1, {}},          {"I8", 1, {}},  {"F8_E5M2", 1, {}},
    {"F8_E4M3", 1, {}},       {"I16", 2, {}},         {"U16", 2, {}}, {"F16", 2, DType::f32},
    {"BF16", 2, DType::bf16}, {"I32", 4, DType::i32}, {"U32", 4, {}}, {"F32", 4, DType::f32},
    {"F64", 8, DType::f64},   {"I64", 8, DType::i64}, {"U64", 8, {}},
};

const FileDType* file_dtype(std::string_view name) {
  for (const FileDType& t : kFileDTypes)
    if (name == t.name) return &t;
  return nullptr;
}

const char* file_dtype_name(DType dtype) {
  for (const FileDType& t : kFileDTypes)
    if (t.dtype == dtype && std::strcmp(t.name, "F16") != 0) return t.name;
  throw Error(std::string("safetensors: no dtype for ") + dtype_name(dtype));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // subnormal: normalise
    exponent = 1;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3ffu;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

struct Entry {
  std::string name;
  const FileDType* type;
  Shape shape;
  uint64_t begin, end;
};

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& where) {
  uint64_t product = 0;
  DLF_CHECK(!__builtin_mul_overflow(a, b, &product), where, ": its size overflows 64 bits");
  return product;
}

Entry read_entry(const std::string& where, const std::string& name, const json::Value& v) {
  DLF_CHECK(v.kind == json::Value::Kind::object, where, ": its entry is not a JSON object");
  const json::Value* dtype = v.find("dtype");
  DLF_CHECK(dtype && dtype->kind == json::Value::Kind::string, where, ": no \"dtype\" string");
  const FileDType* type = file_dtype(dtype->text);
  DLF_CHECK(type, where, ": unknown dtype \"", dtype->text, "\"");
  DLF_CHECK(type->dtype, where, ": dtype ", type->name,
            " is not one dlf computes in (F64, F32, F16, BF16, I64, I32, BOOL)");
  const json::Value* shape = v.find("shape");
  DLF_CHECK(shape && shape->kind == json::Value::Kind::array, where, ": no \"shape\" array");
  DLF_CHECK(shape->items.size() <= kMaxRank, where, ": ", shape->items.size(),
            " dims; dlf takes at most ", kMaxRank);
  Entry e{name, type, {}, 0, 0};
  for (const json::Value& d : shape->items) {
    const std::optional<uint64_t> size = d.as_uint64();
    DLF_CHECK(size && *size <= uint64_t(INT64_MAX), where, ": a dim of its shape is not a size");
    e.shape.push_back(int64_t(*size));
  }
  const json::Value* offsets = v.find("data_offsets");
  const bool pair = offsets && offsets->kind == json::Value::Kind::array &&
                    offsets->items.size() == 2 && offsets->items[0].as_uint64() &&
                    offsets->items[1].as_uint64();
  DLF_CHECK(pair, where, ": \"data_offsets\" is not two byte offsets");
  e.begin = *offsets->items[0].as_uint64();
  e.end = *offsets->items[1].as_uint64();
  return e;
}

// The tensor's bytes as a tensor: a view of the owner's memory where allowed, else a copy.
Tensor make_tensor(const Entry& e, const std::byte* bytes,
                   const std::shared_ptr<const void>& owner) {
  const DType dtype = *e.type->dtype;
  const size_t nbytes = e.end - e.begin;
  if (dtype == DType::b8) {
    for (size_t i = 0; i < nbytes; ++i)
      DLF_CHECK(uint8_t(bytes[i]) <= 1, "tensor '", e.name, "': a BOOL element is neither 0 nor 1");
  }
  if (std::string_view(e.type->name) == "F16") {
    Tensor t = Tensor::empty(e.shape, DType::f32, kCPU);
    float* out = t.data<float>();
    for (size_t i = 0; i < nbytes / 2; ++i) {
      uint16_t h = 0;
      std::memcpy(&h, bytes + 2 * i, 2);
      out[i] = half_to_float(h);
    }
    return t;
  }
  if (owner && reinterpret_cast<uintptr_t>(bytes) % e.type->bytes == 0) {
    auto storage = std::make_shared<Storage>(const_cast<std::byte*>(bytes), nbytes, owner);
    return Tensor(std::move(storage), e.shape, contiguous_strides(e.shape), 0, dtype);
  }
  Tensor t = Tensor::empty(e.shape, dtype, kCPU);
  if (nbytes > 0) std::memcpy(t.raw_data(), bytes, nbytes);
  return t;
}

Safetensors parse(const std::byte* bytes, size_t size, const std::string& source,
                  const std::shared_ptr<const void>& owner) {
  DLF_CHECK(size >= 8, source, ": ", size,
            " bytes, too short for a safetensors file (its header length takes 8)");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | uint8_t(bytes[i]);
  DLF_CHECK(header_bytes <= kMaxHeaderBytes, source, ": a header of ", header_bytes,
            " bytes, more than the ", kMaxHeaderBytes,
            " safetensors allows (not a safetensors file?)");
  DLF_CHECK(header_bytes <= size - 8, source, ": the header of ", header_bytes,
            " bytes runs past the end of the file (", size, " bytes)");
  const char* header = reinterpret_cast<const char*>(bytes + 8);
  DLF_CHECK(header_bytes > 0 && header[0] == '{', source,
            ": the header does not start with '{' (not a safetensors file?)");
  json::Value doc;
  try {
    doc = json::parse(std::string_view(header, header_bytes));
  } catch (const Error& e) {
    throw Error(source + ": the header is not valid JSON (" + e.what() + ")");
  }
  DLF_CHECK(doc.kind == json::Value::Kind::object, source, ": the header is not a JSON object");

  Safetensors out;
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (const auto& [name, value] : doc.members) {
    const std::string where = source + ": tensor '" + name + "'";
    DLF_CHECK(names.insert(name).second, source, ": the header names '", name, "' twice");
    if (name == "__metadata__") {
      DLF_CHECK(value.kind == json::Value::Kind::object, source,
                ": __metadata__ is not a JSON object");
      for (const auto& [key, text] : value.members) {
        DLF_CHECK(text.kind == json::Value::Kind::string, source, ": __metadata__ '", key,
                  "' is not a string");
        DLF_CHECK(out.metadata.emplace(key, text.text).second, source, ": __metadata__ names '",
                  key, "' twice");
      }
      continue;
    }
    entries.push_back(read_entry(where, name, value));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  const uint64_t data_bytes = size - 8 - header_bytes;
  uint64_t expected = 0;
  for (const Entry& e : entries) {
    const std::string where = source + ": tensor '" + e.name + "'";
    DLF_CHECK(e.begin == expected && e.end >= e.begin, where, ": data_offsets [", e.begin, ", ",
              e.end, "] where its bytes should start at ", expected,
              " (tensors follow each other with no gap or overlap)");
    uint64_t elements = 1;
    for (int64_t d : e.shape) elements = checked_mul(elements, uint64_t(d), where);
    const uint64_t nbytes = checked_mul(elements, e.type->bytes, where);
    DLF_CHECK(e.end - e.begin == nbytes, where, ": ", e.type->name, shape_str(e.shape), " takes ",
              nbytes, " bytes, its data_offsets give ", e.end - e.begin);
    DLF_CHECK(e.end <= data_bytes, where, ": its bytes end at ", e.end, ", past the file's ",
              data_bytes, " bytes of data (a truncated file?)");
    expected = e.end;
  }
  DLF_CHECK(expected == data_bytes, source, ": the tensors cover ", expected,
            " bytes of data but the file has ", data_bytes, " (bytes no tensor owns)");
  const std::byte* data = bytes + 8 + header_bytes;
  for (const Entry& e : entries)
    out.tensors.emplace_back(e.name, make_tensor(e, data + e.begin, owner));
  return out;
}

// A FILE* whose every write is checked.
class OutFile {
 public:
  explicit OutFile(const std::filesystem::path& path) : path_(path.string()) {
    file_ = std::fopen(path_.c_str(), "wb");
    DLF_CHECK(file_, "cannot create ", path_, ": ", std::strerror(errno));
  }
  ~OutFile() {
    if (file_) std::fclose(file_);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  void write(const void* data, size_t bytes) {
    DLF_CHECK(bytes == 0 || std::fwrite(data, 1, bytes, file_) == bytes, "writing ", path_, ": ",
              std::strerror(errno));
  }
  void close() {
    const bool ok = std::fflush(file_) == 0 && !std::ferror(file_);
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    DLF_CHECK(ok && closed, "writing ", path_, ": ", std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* file_;
};

}  // namespace

Safetensors parse_safetensors(std::string_view bytes) {
  return parse(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(), "safetensors",
               nullptr);
}

Safetensors load_safetensors(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DLF_CHECK(fd >= 0, "cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const auto size = size_t(st.st_size);
  void* mapped = regular && size >= 8
                     ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)
                     : MAP_FAILED;
  ::close(fd);
  DLF_CHECK(regular, path, " is not a regular file");
  DLF_CHECK(size >= 8, path, ": ", size,
            " bytes, too short for a safetensors file (its header length takes 8)");
  DLF_CHECK(mapped != MAP_FAILED, "cannot map ", path, ": ", std::strerror(errno));
  const std::shared_ptr<const void> owner(
      mapped, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  return parse(static_cast<const std::byte*>(mapped), size, path, owner);
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  struct Item {
    std::string name;
    Tensor t;
  };
  std::vector<Item> items;
  std::set<const TensorImpl*> stored;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    DLF_CHECK(t.defined(), "safetensors: tensor '", name, "' is undefined");
    if (!stored.insert(t.impl()).second) continue;
    DLF_CHECK(name != "__metadata__" && names.insert(name).second, "safetensors: the name '", name,
              "' is given to two tensors");
    items.push_back({name, t.to(kCPU).contiguous()});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return dtype_size(a.t.dtype()) > dtype_size(b.t.dtype());
  });

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      if (header.back() != '{') header += ',';
      header += json::quote(key);
      header += ':';
      header += json::quote(value);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const Item& item : items) {
    if (header.size() > 1) header += ',';
    header += json::quote(item.name);
    header += ":{\"dtype\":\"";
    header += file_dtype_name(item.t.dtype());
    header += "\",\"shape\":[";
    for (size_t d = 0; d < item.t.shape().size(); ++d) {
      if (d > 0) header += ',';
      header += std::to_string(item.t.shape()[d]);
    }
    header += "],\"data_offsets\":[";
    header += std::to_string(offset);
    header += ',';
    offset += item.t.nbytes();
    header += std::to_string(offset);
    header += "]}";
  }
  header += "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  DLF_CHECK(header.size() <= kMaxHeaderBytes, "safetensors: the header of ", path, " would take ",
            header.size(), " bytes, more than the format allows");

  replace_file(path, "safetensors file", [&](const std::filesystem::path& temp) {
    OutFile file(temp);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));
    file.write(length, 8);
    file.write(header.data(), header.size());
    for (const Item& item : items) file.write(item.t.raw_data(), item.t.nbytes());
    file.close();
  });
}

}  // namespace dlf
