// Tensor: a small handle to a strided view (shape, strides, offset) of a shared Storage.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <dlf/core/dtype.h>
#include <dlf/core/shape.h>
#include <dlf/device/allocator.h>
#include <dlf/device/device.h>
#include <dlf/error.h>

namespace dlf {

/// Bytes on one device, shared by every view of them. The version counts in-place writes
/// (autograd refuses to use a saved tensor whose storage changed after it was saved).
class Storage {
 public:
  /// Allocates on `device`, counted under the calling thread's MemoryScope category.
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const {
    DLF_CHECK(!released_,
              "a tensor's storage is released: a ZeRO-3 parameter outside its "
              "block's forward and backward (gather the whole state to read it)");
    return data_;
  }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }
  MemoryCategory category() const { return category_; }
  /// Counts these bytes under another category from now on (a tensor becoming a parameter).
  void set_category(MemoryCategory category);
  /// Frees the bytes but keeps the storage — its tensors, version and category — until
  /// materialize() allocates them again (uninitialised, for the caller to fill without a new
  /// version: the values autograd saved). A ZeRO-3 parameter between its uses.
  void release();
  void materialize();
  bool released() const { return released_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  MemoryCategory category_;
  uint64_t version_ = 0;
  bool released_ = false;
};

struct AutogradMeta;  // defined by autograd/ (floor 3); core only carries the pointer

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  std::shared_ptr<AutogradMeta> autograd;
};

/// A slice of one dim for Tensor::index: Python's start:stop:step (start and stop may be
/// negative, counting from the end; left out, the whole dim).
struct Slice {
  std::optional<int64_t> start = {}, stop = {};
  int64_t step = 1;
};
/// An integer (selects, removing the dim) or a Slice.
using TensorIndex = std::variant<int64_t, Slice>;

class Tensor {
 public:
  Tensor() = default;  ///< an undefined tensor (e.g. an absent bias)
  Tensor(std::shared_ptr<Storage> storage, Shape sizes, Shape strides, int64_t offset, DType dtype);
  /// A fresh contiguous tensor with uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype, Device device = default_device());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->sizes; }
  const Shape& strides() const { return impl_->strides; }
  int64_t offset() const { return impl_->offset; }
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  /// Size of one dim; negative dims count from the end.
  int64_t size(int64_t dim) const;
  int64_t numel() const { return dlf::numel(impl_->sizes); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device(); }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  bool is_contiguous() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }

  /// Pointer to the first element. T must match the dtype; the device must hold data.
  template <typename T>
  T* data() const {
    check_access(dtype_of<T>());
    return static_cast<T*>(impl_->storage->data()) + impl_->offset;
  }
  void* raw_data() const;
  /// The value of a one-element tensor, converted to T.
  template <typename T>
  T item() const;
  /// All elements in row-major order, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;

  // Views: share storage, no copy (each goes through dispatch, so autograd and capture see it).
  Tensor view(const Shape& shape) const;     ///< requires compatible strides; one dim may be -1
  Tensor reshape(const Shape& shape) const;  ///< a view when possible, else a copy
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  ///< removes `dim`
  Tensor expand(const Shape& shape) const;          ///< broadcast; -1 keeps a dim
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze() const;  ///< drops every size-1 dim
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;

  /// t[i]: the view of index i of dim 0 (libtorch's operator[]).
  Tensor operator[](int64_t index) const { return select(0, index); }
  /// t.index({0, Slice{1, 3}, Slice{}}): Python's t[0, 1:3, :] — integers select (removing the
  /// dim), slices narrow; dims not named are kept whole. Views, no copy.
  Tensor index(std::initializer_list<TensorIndex> indices) const;

  // Math as methods, as in PyTorch ((p - y).pow(2).mean()): the ops of core/ops/.
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor square() const;
  Tensor pow(double exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor clamp(double min, double max) const;
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  /// Over `dims` (all when empty).
  Tensor sum(const Shape& dims = {}, bool keepdim = false) const;
  Tensor mean(const Shape& dims = {}, bool keepdim = false) const;
  Tensor max(const Shape& dims = {}, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;

  Tensor contiguous() const;  ///< self if already contiguous, else a contiguous copy
  Tensor clone() const;       ///< a contiguous copy
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;

  /// Copies `src` (same shape, broadcastable, any dtype) into this tensor in place.
  Tensor& copy_(const Tensor& src);
  /// Points every handle of this tensor at `other`'s data (storage, shape, dtype), keeping
  /// its autograd state: how a module moves its parameters to another device or dtype.
  void set_data(const Tensor& other) const;

  std::string str() const;

  // Autograd (implemented by autograd/, floor 3).
  bool requires_grad() const;
  /// Marks a leaf as needing a gradient; returns *this.
  const Tensor& requires_grad_(bool value = true) const;
  /// True unless the tensor was made by a recorded op.
  bool is_leaf() const;
  /// The accumulated gradient of a leaf (undefined until backward reaches it).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  /// Backward from this tensor; `grad` may be omitted for one-element tensors.
  void backward(const Tensor& grad = {}, bool retain_graph = false,
                bool create_graph = false) const;
  /// The same data, cut from the graph.
  Tensor detach() const;
  /// Runs `hook` on this tensor's gradient when it is computed; its result replaces it.
  void register_hook(std::function<Tensor(const Tensor&)> hook) const;
  /// Runs `hook` when a leaf's gradient is final for this backward (DDP rides on this).
  void register_grad_ready_hook(std::function<void(const Tensor&)> hook) const;

  TensorImpl* impl() const { return impl_.get(); }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  const std::shared_ptr<AutogradMeta>& autograd_meta() const { return impl_->autograd; }
  void set_autograd_meta(std::shared_ptr<AutogradMeta> meta) const {
    impl_->autograd = std::move(meta);
  }

 private:
  void check_access(DType requested) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

extern template float Tensor::item<float>() const;
extern template double Tensor::item<double>() const;
extern template int64_t Tensor::item<int64_t>() const;
extern template int32_t Tensor::item<int32_t>() const;
extern template bool Tensor::item<bool>() const;
extern template std::vector<float> Tensor::to_vector<float>() const;
extern template std::vector<double> Tensor::to_vector<double>() const;
extern template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
extern template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
extern template std::vector<bool> Tensor::to_vector<bool>() const;

}  // namespace dlf
