#include <H5Cpp.h>
#include <fcntl.h>
#include <unistd.h>

#include <dlf/nn/checkpoint.h>

#include <filesystem>
#include <map>

namespace dlf::nn {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "dlf-checkpoint";
constexpr int64_t kVersion = 1;

fs::path file_in(const std::string& dir) { return fs::path(dir) / "checkpoint.h5"; }

// The stored type of each dtype: bf16 as its 16 bits, bool as bytes.
const H5::PredType& h5_type(DType t) {
  switch (t) {
    case DType::f32:
      return H5::PredType::NATIVE_FLOAT;
    case DType::f64:
      return H5::PredType::NATIVE_DOUBLE;
    case DType::bf16:
      return H5::PredType::NATIVE_UINT16;
    case DType::i32:
      return H5::PredType::NATIVE_INT32;
    case DType::i64:
      return H5::PredType::NATIVE_INT64;
    case DType::b8:
      return H5::PredType::NATIVE_UINT8;
  }
  throw Error("checkpoint: unknown dtype");
}

const H5::StrType& string_type() {
  static const H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  return type;
}

void write_string(H5::H5Object& where, const char* name, const std::string& value) {
  where.createAttribute(name, string_type(), H5::DataSpace(H5S_SCALAR)).write(string_type(), value);
}
std::string read_string(const H5::H5Object& where, const char* name) {
  std::string value;
  where.openAttribute(name).read(string_type(), value);
  return value;
}
void write_int(H5::H5Object& where, const char* name, int64_t value) {
  where.createAttribute(name, H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_INT64, &value);
}
int64_t read_int(const H5::H5Object& where, const char* name) {
  int64_t value = 0;
  where.openAttribute(name).read(H5::PredType::NATIVE_INT64, &value);
  return value;
}

H5::DataSpace space_of(const Shape& shape) {
  if (shape.empty()) return H5::DataSpace(H5S_SCALAR);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return H5::DataSpace(int(dims.size()), dims.data());
}

// One group per tensor list; the names, in order, as newline-separated text in a byte dataset
// (HDF5 lists a group's members alphabetically, and attributes are limited to 64 KiB).
void write_tensors(H5::H5File& file, const std::string& group_name, const NamedTensors& tensors) {
  H5::Group group = file.createGroup(group_name);
  std::map<const TensorImpl*, std::string> written;  // tied tensors: stored once, then linked
  std::string order;
  for (const auto& [name, t] : tensors) {
    DLF_CHECK(!name.empty() && name.find_first_of("/\n") == std::string::npos,
              "checkpoint: tensor name '", name,
              "' cannot be stored (empty, or has '/' or a newline)");
    order += name + "\n";
    if (auto it = written.find(t.impl()); it != written.end()) {
      group.link(H5L_TYPE_HARD, it->second, name);
      continue;
    }
    const Tensor data = t.contiguous();
    H5::DataSet ds = group.createDataSet(name, h5_type(t.dtype()), space_of(t.shape()));
    if (data.numel() > 0) ds.write(data.raw_data(), h5_type(t.dtype()));
    write_string(ds, "dtype", dtype_name(t.dtype()));
    written.emplace(t.impl(), name);
  }
  const hsize_t n = order.size();
  H5::DataSpace space(1, &n);
  file.createDataSet(group_name + ".names", H5::PredType::NATIVE_CHAR, space)
      .write(order.data(), H5::PredType::NATIVE_CHAR);
}

NamedTensors read_tensors(const H5::H5File& file, const std::string& group_name) {
  H5::DataSet names_ds = file.openDataSet(group_name + ".names");
  std::string order(size_t(names_ds.getSpace().getSimpleExtentNpoints()), '\0');
  if (!order.empty()) names_ds.read(order.data(), H5::PredType::NATIVE_CHAR);
  H5::Group group = file.openGroup(group_name);
  NamedTensors out;
  size_t begin = 0;
  for (size_t end; (end = order.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string name = order.substr(begin, end - begin);
    try {
      H5::DataSet ds = group.openDataSet(name);
      const DType dtype = parse_dtype(read_string(ds, "dtype"));
      H5::DataSpace space = ds.getSpace();
      std::vector<hsize_t> dims(size_t(space.getSimpleExtentNdims()));
      if (!dims.empty()) space.getSimpleExtentDims(dims.data());
      Tensor t = Tensor::empty(Shape(dims.begin(), dims.end()), dtype);
      if (t.numel() > 0) ds.read(t.raw_data(), h5_type(dtype));
      out.emplace_back(name, t);
    } catch (const H5::Exception&) {
      throw Error("checkpoint " + file.getFileName() + ": tensor '" + name + "' in " + group_name +
                  " is missing or unreadable (a truncated or damaged file?)");
    }
  }
  return out;
}

void flush_to_disk(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  DLF_CHECK(fd >= 0 && ::fsync(fd) == 0, "checkpoint: cannot flush ", path.string());
  ::close(fd);
}

}  // namespace

bool checkpoint_exists(const std::string& dir) { return fs::is_regular_file(file_in(dir)); }

void save_checkpoint(const std::string& dir, const Checkpoint& ckpt) {
  H5::Exception::dontPrint();
  std::error_code ec;
  fs::create_directories(dir, ec);
  DLF_CHECK(fs::is_directory(dir), "checkpoint: cannot create the directory ", dir);
  const fs::path target = file_in(dir);
  const fs::path temp = fs::path(dir) / ("checkpoint.h5.tmp-" + std::to_string(::getpid()));
  try {
    {
      H5::H5File file(temp.string(), H5F_ACC_TRUNC);
      H5::Group root = file.openGroup("/");
      write_string(root, "format", kFormat);
      write_int(root, "version", kVersion);
      write_int(root, "step", ckpt.step);
      write_int(root, "rng_seed", int64_t(ckpt.rng_seed));
      write_int(root, "rng_offset", int64_t(ckpt.rng_offset));
      write_string(root, "config", ckpt.config);
      write_tensors(file, "/model", ckpt.model);
      write_tensors(file, "/optimizer", ckpt.optimizer);
    }
    flush_to_disk(temp);
    fs::rename(temp, target, ec);
    DLF_CHECK(!ec, "checkpoint: cannot move the new checkpoint into place as ", target.string(),
              " (", ec.message(), "); the previous checkpoint is unchanged");
  } catch (const H5::Exception& e) {
    fs::remove(temp, ec);
    throw Error("checkpoint: writing " + target.string() + " failed (" + e.getDetailMsg() +
                "); the previous checkpoint is unchanged");
  } catch (...) {
    fs::remove(temp, ec);
    throw;
  }
}

Checkpoint load_checkpoint(const std::string& dir) {
  H5::Exception::dontPrint();
  const fs::path path = file_in(dir);
  DLF_CHECK(fs::is_regular_file(path), "no checkpoint at ", path.string());
  Checkpoint ckpt;
  std::unique_ptr<H5::H5File> file;
  try {
    file = std::make_unique<H5::H5File>(path.string(), H5F_ACC_RDONLY);
  } catch (const H5::Exception&) {
    throw Error("checkpoint " + path.string() + " is not a readable HDF5 file (truncated?)");
  }
  try {
    H5::Group root = file->openGroup("/");
    DLF_CHECK(root.attrExists("format") && read_string(root, "format") == kFormat, "checkpoint ",
              path.string(), " is an HDF5 file but not a dlf checkpoint");
    const int64_t version = read_int(root, "version");
    DLF_CHECK(version == kVersion, "checkpoint ", path.string(), " has format version ", version,
              "; this dlf reads version ", kVersion);
    ckpt.step = read_int(root, "step");
    ckpt.rng_seed = uint64_t(read_int(root, "rng_seed"));
    ckpt.rng_offset = uint64_t(read_int(root, "rng_offset"));
    ckpt.config = read_string(root, "config");
  } catch (const H5::Exception&) {
    throw Error("checkpoint " + path.string() + ": its header is unreadable (a damaged file?)");
  }
  try {
    ckpt.model = read_tensors(*file, "/model");
    ckpt.optimizer = read_tensors(*file, "/optimizer");
  } catch (const H5::Exception&) {
    throw Error("checkpoint " + path.string() + ": its tensor lists are unreadable (truncated?)");
  }
  return ckpt;
}

void restore_module(Module& module, const Checkpoint& ckpt) { module.load_state_dict(ckpt.model); }

}  // namespace dlf::nn
