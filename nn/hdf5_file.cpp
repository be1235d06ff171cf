#include "hdf5_file.h"

#include <dlf/core/checksum.h>

#include <bit>
#include <limits>
#include <utility>

namespace dlf::nn::h5 {
namespace {

// Before HDF5's first use: no clean-up at exit. A file whose close failed (a full disk) stays
// half-open inside HDF5, and closing it again at exit crashes HDF5 1.10 (H5F__close_cb); the
// kernel frees everything at exit anyway. Then, per thread: no error stack printed to stderr
// (dlf reports errors itself).
void prepare_hdf5() {
  static const bool no_atexit = H5dont_atexit() >= 0;
  thread_local const bool silenced = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
  (void)no_atexit;
  (void)silenced;
}

// The most telling line of HDF5's error stack: the system's message when a system call failed
// ("No space left on device"), else the innermost description.
std::string hdf5_message() {
  struct Found {
    std::string innermost, system;
  } found;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        auto* f = static_cast<Found*>(data);
        const std::string desc = e->desc != nullptr ? e->desc : "";
        f->innermost = desc;
        const std::string key = "error message = '";
        if (const size_t at = desc.find(key); at != std::string::npos && f->system.empty()) {
          const size_t begin = at + key.size();
          f->system = desc.substr(begin, desc.find('\'', begin) - begin);
        }
        return 0;
      },
      &found);
  // The stack's strings live until it is cleared (a rank thread's would leak at its exit).
  H5Eclear2(H5E_DEFAULT);
  if (!found.system.empty()) return found.system;
  return found.innermost.empty() ? "HDF5 gave no reason" : found.innermost;
}

hid_t checked_id(hid_t id, const std::string& what) {
  if (id < 0) throw Error(what + " failed: " + hdf5_message());
  return id;
}

// The type a dtype's elements are stored as: bf16 as its 16 bits, bool as bytes.
hid_t stored_type(DType t) {
  switch (t) {
    case DType::f32:
      return H5T_NATIVE_FLOAT;
    case DType::f64:
      return H5T_NATIVE_DOUBLE;
    case DType::bf16:
      return H5T_NATIVE_UINT16;
    case DType::i32:
      return H5T_NATIVE_INT32;
    case DType::i64:
      return H5T_NATIVE_INT64;
    case DType::b8:
      return H5T_NATIVE_UINT8;
  }
  throw Error("checkpoint: unknown dtype");
}

Handle fixed_string_type(size_t size) {
  Handle type(checked_id(H5Tcopy(H5T_C_S1), "H5Tcopy"), H5Tclose, "closing a string type");
  check(H5Tset_size(type.id(), std::max<size_t>(size, 1)), "H5Tset_size");
  check(H5Tset_strpad(type.id(), H5T_STR_NULLPAD), "H5Tset_strpad");
  return type;
}

Handle scalar_space() {
  return {checked_id(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose, "closing a dataspace"};
}

// The extent of a dataspace: its dims, each checked, and their product.
struct Extent {
  std::vector<hsize_t> dims;
  uint64_t numel = 1;
};

Extent extent_of(hid_t space, const std::string& label) {
  const H5S_class_t kind = H5Sget_simple_extent_type(space);
  DLF_CHECK(kind == H5S_SCALAR || kind == H5S_SIMPLE, label,
            " has no simple shape (a damaged file?)");
  const int rank = H5Sget_simple_extent_ndims(space);
  DLF_CHECK(rank >= 0 && rank <= 16, label, " declares ", rank, " dimensions (a damaged file?)");
  Extent e;
  e.dims.resize(size_t(rank));
  if (rank > 0) check(H5Sget_simple_extent_dims(space, e.dims.data(), nullptr), label + ": dims");
  for (const hsize_t d : e.dims) {
    DLF_CHECK(d <= uint64_t(std::numeric_limits<int64_t>::max()) &&
                  (d == 0 || e.numel <= std::numeric_limits<uint64_t>::max() / d),
              label, " declares a shape whose size overflows (a damaged file?)");
    e.numel *= d;
  }
  return e;
}

}  // namespace

// ---- Handle ----

Handle::Handle(hid_t id, herr_t (*close)(hid_t), const std::string& what)
    : id_(id), close_(close), what_(what) {}

Handle::Handle(Handle&& other) noexcept
    : id_(std::exchange(other.id_, H5I_INVALID_HID)),
      close_(other.close_),
      what_(std::move(other.what_)) {}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0 && close_(id_) < 0) H5Eclear2(H5E_DEFAULT);
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
    close_ = other.close_;
    what_ = std::move(other.what_);
  }
  return *this;
}

Handle::~Handle() {
  if (id_ >= 0 && close_(id_) < 0) H5Eclear2(H5E_DEFAULT);  // an error is being reported already
}

void Handle::close() {
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  if (id >= 0) check(close_(id), what_);
}

void check(herr_t status, const std::string& what) {
  if (status < 0) throw Error(what + " failed: " + hdf5_message());
}

// ---- Writer ----

Writer::Writer(const std::string& path, uint64_t user_block) : path_(path) {
  prepare_hdf5();
  Handle fapl(checked_id(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate"), H5Pclose, "H5Pclose");
  // Closing the file fails while any of its objects is open, rather than deferring the close.
  check(H5Pset_fclose_degree(fapl.id(), H5F_CLOSE_SEMI), "H5Pset_fclose_degree");
  Handle fcpl(checked_id(H5Pcreate(H5P_FILE_CREATE), "H5Pcreate"), H5Pclose, "H5Pclose");
  if (user_block > 0) check(H5Pset_userblock(fcpl.id(), user_block), "H5Pset_userblock");
  file_ = Handle(
      checked_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.id(), fapl.id()), "creating " + path),
      H5Fclose, "closing " + path);
}

Handle Writer::create_group(const std::string& name) {
  return {checked_id(H5Gcreate2(root(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     "creating group " + name),
          H5Gclose, "closing group " + name};
}

Writer::Placed Writer::write_tensor(hid_t group, const std::string& name, const Tensor& tensor) {
  const Tensor data = tensor.contiguous();
  const std::string what = "writing tensor '" + name + "'";
  Handle space;
  if (data.dim() == 0) {
    space = scalar_space();
  } else {
    const std::vector<hsize_t> dims(data.shape().begin(), data.shape().end());
    space = Handle(checked_id(H5Screate_simple(int(dims.size()), dims.data(), nullptr), what),
                   H5Sclose, what);
  }
  const hid_t type = stored_type(data.dtype());
  Handle ds(checked_id(H5Dcreate2(group, name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT,
                                  H5P_DEFAULT),
                       what),
            H5Dclose, what);
  Placed placed;
  if (data.numel() > 0) {
    check(H5Dwrite(ds.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.raw_data()), what);
    const haddr_t offset = H5Dget_offset(ds.id());  // contiguous: one run of bytes
    DLF_CHECK(offset != HADDR_UNDEF, what, ": HDF5 gave no file offset for its data");
    placed = {offset, data.nbytes(), checksum64(data.raw_data(), data.nbytes())};
  }
  write_string_attr(ds.id(), "dtype", dtype_name(data.dtype()));
  ds.close();
  return placed;
}

void Writer::write_bytes(hid_t where, const std::string& name, const std::string& bytes) {
  const std::string what = "writing " + name;
  const hsize_t n = bytes.size();
  Handle space(checked_id(H5Screate_simple(1, &n, nullptr), what), H5Sclose, what);
  Handle ds(checked_id(H5Dcreate2(where, name.c_str(), H5T_NATIVE_CHAR, space.id(), H5P_DEFAULT,
                                  H5P_DEFAULT, H5P_DEFAULT),
                       what),
            H5Dclose, what);
  if (n > 0)
    check(H5Dwrite(ds.id(), H5T_NATIVE_CHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()), what);
  ds.close();
}

void Writer::link(hid_t group, const std::string& existing, const std::string& name) {
  check(H5Lcreate_hard(group, existing.c_str(), group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
        "linking " + name + " to " + existing);
}

void Writer::write_string_attr(hid_t object, const std::string& name, const std::string& value) {
  const std::string what = "writing attribute " + name;
  Handle type = fixed_string_type(value.size());
  Handle space = scalar_space();
  Handle attr(
      checked_id(H5Acreate2(object, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT),
                 what),
      H5Aclose, what);
  std::string padded = value;
  padded.resize(std::max<size_t>(value.size(), 1), '\0');
  check(H5Awrite(attr.id(), type.id(), padded.data()), what);
  attr.close();
}

void Writer::write_int_attr(hid_t object, const std::string& name, int64_t value) {
  const std::string what = "writing attribute " + name;
  Handle space = scalar_space();
  Handle attr(checked_id(H5Acreate2(object, name.c_str(), H5T_NATIVE_INT64, space.id(), H5P_DEFAULT,
                                    H5P_DEFAULT),
                         what),
              H5Aclose, what);
  check(H5Awrite(attr.id(), H5T_NATIVE_INT64, &value), what);
  attr.close();
}

void Writer::close() {
  check(H5Fflush(file_.id(), H5F_SCOPE_GLOBAL), "flushing " + path_);
  file_.close();
}

// ---- Reader ----

Reader::Reader(const std::string& path) : path_(path) {
  prepare_hdf5();
  // H5Fis_hdf5 reads only the superblock signature: anything else is not HDF5 at all.
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Error(path + " is not an HDF5 file (truncated, or another format?)");
  }
  Handle fapl(checked_id(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate"), H5Pclose, "H5Pclose");
  // Closing the file closes whatever of it is still open: nothing of a bad file lingers.
  check(H5Pset_fclose_degree(fapl.id(), H5F_CLOSE_STRONG), "H5Pset_fclose_degree");
  file_ = Handle(checked_id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.id()), "opening " + path),
                 H5Fclose, "closing " + path);
  const hid_t id = file_.id();
  hsize_t size = 0;
  check(H5Fget_filesize(id, &size), path + ": its size");
  file_size_ = size;
}

bool Reader::has_attr(hid_t object, const std::string& name) const {
  const htri_t found = H5Aexists(object, name.c_str());
  check(found, path_ + ": looking for attribute " + name);
  return found > 0;
}

bool Reader::has_link(hid_t group, const std::string& name) const {
  const htri_t found = H5Lexists(group, name.c_str(), H5P_DEFAULT);
  check(found, path_ + ": looking for " + name);
  return found > 0;
}

Handle Reader::open_group(const std::string& name) const {
  const std::string what = path_ + ": group " + name;
  DLF_CHECK(has_link(root(), name), what, " is missing");
  return {checked_id(H5Gopen2(root(), name.c_str(), H5P_DEFAULT), what), H5Gclose, what};
}

std::string Reader::read_string_attr(hid_t object, const std::string& name,
                                     size_t max_bytes) const {
  const std::string what = path_ + ": attribute " + name;
  DLF_CHECK(has_attr(object, name), what, " is missing");
  Handle attr(checked_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), what), H5Aclose, what);
  Handle type(checked_id(H5Aget_type(attr.id()), what), H5Tclose, what);
  Handle space(checked_id(H5Aget_space(attr.id()), what), H5Sclose, what);
  DLF_CHECK(H5Tget_class(type.id()) == H5T_STRING && H5Tis_variable_str(type.id()) == 0 &&
                H5Sget_simple_extent_type(space.id()) == H5S_SCALAR,
            what, " is not a fixed-length text (a damaged file, or not written by dlf?)");
  const size_t size = H5Tget_size(type.id());
  DLF_CHECK(size > 0 && size <= max_bytes, what, " is ", size, " bytes long, more than the ",
            max_bytes, " it may have");
  Handle memory = fixed_string_type(size);
  std::string value(size, '\0');
  check(H5Aread(attr.id(), memory.id(), value.data()), what);
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}

int64_t Reader::read_int_attr(hid_t object, const std::string& name) const {
  const std::string what = path_ + ": attribute " + name;
  DLF_CHECK(has_attr(object, name), what, " is missing");
  Handle attr(checked_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), what), H5Aclose, what);
  Handle type(checked_id(H5Aget_type(attr.id()), what), H5Tclose, what);
  Handle space(checked_id(H5Aget_space(attr.id()), what), H5Sclose, what);
  DLF_CHECK(H5Tequal(type.id(), H5T_NATIVE_INT64) > 0 &&
                H5Sget_simple_extent_type(space.id()) == H5S_SCALAR,
            what, " is not a 64-bit integer (a damaged file?)");
  int64_t value = 0;
  check(H5Aread(attr.id(), H5T_NATIVE_INT64, &value), what);
  return value;
}

std::string Reader::read_bytes(hid_t where, const std::string& name, size_t max_bytes) const {
  const std::string what = path_ + ": " + name;
  DLF_CHECK(has_link(where, name), what, " is missing");
  Handle ds(checked_id(H5Dopen2(where, name.c_str(), H5P_DEFAULT), what), H5Dclose, what);
  Handle type(checked_id(H5Dget_type(ds.id()), what), H5Tclose, what);
  Handle space(checked_id(H5Dget_space(ds.id()), what), H5Sclose, what);
  const Extent e = extent_of(space.id(), what);
  DLF_CHECK(H5Tequal(type.id(), H5T_NATIVE_CHAR) > 0 && e.dims.size() == 1, what,
            " is not a byte string (a damaged file?)");
  DLF_CHECK(e.numel <= max_bytes && e.numel <= file_size_, what, " declares ", e.numel,
            " bytes, more than it may have (a damaged file?)");
  DLF_CHECK(H5Dget_storage_size(ds.id()) == e.numel, what,
            " does not hold the bytes it declares (a truncated file?)");
  std::string bytes(e.numel, '\0');
  if (!bytes.empty())
    check(H5Dread(ds.id(), H5T_NATIVE_CHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()), what);
  return bytes;
}

Tensor Reader::read_tensor(hid_t group, const std::string& name, const std::string& label) const {
  const std::string what = path_ + ": tensor '" + label + "'";
  DLF_CHECK(has_link(group, name), what, " is missing");
  Handle ds(checked_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), what), H5Dclose, what);
  DType dtype;
  try {
    dtype = parse_dtype(read_string_attr(ds.id(), "dtype", 16));
  } catch (const Error& e) {
    throw Error(what + " has no valid dtype (" + e.what() + ")");
  }
  Handle type(checked_id(H5Dget_type(ds.id()), what), H5Tclose, what);
  DLF_CHECK(H5Tequal(type.id(), stored_type(dtype)) > 0, what, " is not stored as its dtype says (",
            dtype_name(dtype), ")");
  Handle space(checked_id(H5Dget_space(ds.id()), what), H5Sclose, what);
  const Extent e = extent_of(space.id(), what);
  const uint64_t bytes_per = dtype_size(dtype);
  DLF_CHECK(e.numel <= file_size_ / bytes_per, what, " declares ", e.numel,
            " elements, more than the whole file holds (a damaged file?)");
  DLF_CHECK(H5Dget_storage_size(ds.id()) == e.numel * bytes_per, what,
            " does not hold the bytes its shape needs (a truncated or damaged file?)");
  Tensor t = Tensor::empty(Shape(e.dims.begin(), e.dims.end()), dtype, kCPU);
  if (t.numel() > 0)
    check(H5Dread(ds.id(), stored_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()), what);
  return t;
}

std::vector<std::string> Reader::dataset_paths() const {
  std::vector<std::string> paths;
  auto visit = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    if (info->type == H5O_TYPE_DATASET)
      static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  check(H5Ovisit2(root(), H5_INDEX_NAME, H5_ITER_INC, visit, &paths, H5O_INFO_BASIC),
        path_ + ": listing its datasets");
  return paths;
}

Tensor Reader::read_any_tensor(const std::string& name) const {
  const std::string what = path_ + ": dataset '" + name + "'";
  Handle ds(checked_id(H5Dopen2(root(), name.c_str(), H5P_DEFAULT), what), H5Dclose, what);
  Handle type(checked_id(H5Dget_type(ds.id()), what), H5Tclose, what);
  const H5T_class_t kind = H5Tget_class(type.id());
  DLF_CHECK(kind == H5T_FLOAT || kind == H5T_INTEGER, what,
            " holds neither floats nor integers (strings, compounds and enums such as h5py's "
            "bool are not tensors)");
  const DType dtype = kind == H5T_INTEGER           ? DType::i64
                      : H5Tget_size(type.id()) <= 4 ? DType::f32
                                                    : DType::f64;
  Handle space(checked_id(H5Dget_space(ds.id()), what), H5Sclose, what);
  const Extent e = extent_of(space.id(), what);
  Tensor t = Tensor::empty(Shape(e.dims.begin(), e.dims.end()), dtype, kCPU);
  if (t.numel() > 0)
    check(H5Dread(ds.id(), stored_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()), what);
  return t;
}

}  // namespace dlf::nn::h5
