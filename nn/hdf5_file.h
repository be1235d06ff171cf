// A small checked layer over HDF5's C API, the only place dlf touches HDF5.
//
// Writing: every call's status is checked, closes included (HDF5 writes much of a file when
// it is closed), so a full disk is an error, never a file that only looks written.
// Reading checks every object's type, rank, shape and size before anything is read, bounds
// sizes by the file's own size, and never reads anything of variable length (HDF5's global
// heap). Every failure is a dlf::Error saying what failed. (Checkpoints are also sealed:
// checkpoint_seal.h.)
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::nn::h5 {

/// An HDF5 identifier that is closed once: by close(), which reports a failure, or silently by
/// the destructor (after an error has already been raised).
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t), const std::string& what);
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();

  hid_t id() const { return id_; }
  void close();

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
  std::string what_;
};

/// Throws dlf::Error("<what> failed: <HDF5's innermost message>") when `status` < 0.
void check(herr_t status, const std::string& what);

/// A file being written.
class Writer {
 public:
  /// Creates (truncates) the file, its first `user_block` bytes left to the caller (0, or a
  /// power of two from 512).
  Writer(const std::string& path, uint64_t user_block);
  hid_t root() const { return file_.id(); }
  Handle create_group(const std::string& name);
  /// Where a dataset's elements lie in the file, and their checksum (size 0: nowhere).
  struct Placed {
    uint64_t offset = 0, size = 0, checksum = 0;
  };
  /// A dataset holding `tensor` (contiguous copy of its elements) with a "dtype" attribute.
  Placed write_tensor(hid_t group, const std::string& name, const Tensor& tensor);
  /// A one-dimensional byte dataset (long text: names, configs).
  void write_bytes(hid_t where, const std::string& name, const std::string& bytes);
  void link(hid_t group, const std::string& existing, const std::string& name);
  void write_string_attr(hid_t object, const std::string& name, const std::string& value);
  void write_int_attr(hid_t object, const std::string& name, int64_t value);
  /// Flushes and closes the file: after it returns, every byte is with the kernel.
  void close();

 private:
  std::string path_;
  Handle file_;
};

/// A file being read, not trusted.
class Reader {
 public:
  explicit Reader(const std::string& path);
  const std::string& path() const { return path_; }
  hid_t root() const { return file_.id(); }
  uint64_t file_size() const { return file_size_; }

  bool has_attr(hid_t object, const std::string& name) const;
  bool has_link(hid_t group, const std::string& name) const;
  Handle open_group(const std::string& name) const;
  /// A fixed-length string attribute of at most `max_bytes`.
  std::string read_string_attr(hid_t object, const std::string& name, size_t max_bytes) const;
  int64_t read_int_attr(hid_t object, const std::string& name) const;
  /// A one-dimensional byte dataset of at most `max_bytes`.
  std::string read_bytes(hid_t where, const std::string& name, size_t max_bytes) const;
  /// A tensor written by Writer::write_tensor. `label` names it in errors.
  Tensor read_tensor(hid_t group, const std::string& name, const std::string& label) const;
  /// The path of every dataset in the file ("a/b/c"), each object once, in name order.
  std::vector<std::string> dataset_paths() const;
  /// A dataset of any writer (h5py, say) at `path`: floats as f32 (up to 4 bytes) or f64,
  /// integers as i64 (HDF5 converts); any other type is a dlf::Error naming it.
  Tensor read_any_tensor(const std::string& path) const;

 private:
  std::string path_;
  Handle file_;
  uint64_t file_size_ = 0;
};

}  // namespace dlf::nn::h5
