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
  /// Borrows `nbytes` at `data` on `device` that `owner` keeps alive (a memory-mapped file, a
  /// slice of a graph's arena): not allocated, counted or freed by dlf. It cannot be released.
  Storage(void* data, size_t nbytes, std::shared_ptr<const void> owner, Device device = kCPU);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The first byte; a dlf::Error if the storage is released.
  void* data() const {
    DLF_CHECK(!released_,
              "a tensor's storage is released: a ZeRO-3 parameter outside the forward and "
              "backward that gather it (FullyShardedDataParallel::unshard() before a forward, "
              "gather_whole() to read it)");
    return data_;
  }
  size_t nbytes() const { return nbytes_; }  ///< its size in bytes, released or not
  Device device() const { return device_; }  ///< where the bytes live
  /// The count of in-place writes so far; bump_version() counts one more.
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }  ///< after an in-place write
  /// What the bytes are counted as.
  MemoryCategory category() const { return category_; }
  /// Counts these bytes under another category from now on (a tensor becoming a parameter).
  void set_category(MemoryCategory category);
  /// Frees the bytes but keeps the storage — its tensors, version and category — until
  /// materialize() allocates them again (uninitialised, for the caller to fill without a new
  /// version: the values autograd saved). A ZeRO-3 parameter between its uses.
  void release();
  void materialize();                          ///< after release(): the bytes again
  bool released() const { return released_; }  ///< between release() and materialize()

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  MemoryCategory category_;
  uint64_t version_ = 0;
  bool released_ = false;
  std::shared_ptr<const void> owner_;  // set when the bytes are borrowed
};

struct AutogradMeta;  // defined by autograd/ (floor 3); core only carries the pointer

/// What a Tensor handle points at: a strided view of a storage, and its autograd state.
/// Handles that share one TensorImpl are the same tensor.
struct TensorImpl {
  std::shared_ptr<Storage> storage;        ///< the bytes, shared by every view of them
  Shape sizes;                             ///< the shape
  Shape strides;                           ///< per dim, in elements
  int64_t offset = 0;                      ///< of the first element in the storage, in elements
  DType dtype = DType::f32;                ///< the element type
  std::shared_ptr<AutogradMeta> autograd;  ///< null until autograd needs it
};

/// A slice of one dim for Tensor::index: Python's start:stop:step (start and stop may be
/// negative, counting from the end; left out, the whole dim).
struct Slice {
  std::optional<int64_t> start = {};  ///< first index; none: 0
  std::optional<int64_t> stop = {};   ///< one past the last; none: the dim's size
  int64_t step = 1;                   ///< positive
};
/// An integer (selects, removing the dim) or a Slice.
using TensorIndex = std::variant<int64_t, Slice>;

/// A handle to a strided view of a Storage, as torch::Tensor: copying the handle shares the
/// tensor; views share the storage. Every op on it goes through dispatch() (core/op.h).
class Tensor {
 public:
  Tensor() = default;  ///< an undefined tensor (e.g. an absent bias)
  /// A view of `storage`: `sizes` and `strides` in elements, from element `offset`.
  Tensor(std::shared_ptr<Storage> storage, Shape sizes, Shape strides, int64_t offset, DType dtype);
  /// A fresh dense tensor (row-major unless `format` says otherwise), contents uninitialised.
  static Tensor empty(const Shape& shape, DType dtype, Device device = default_device(),
                      MemoryFormat format = MemoryFormat::contiguous);

  bool defined() const { return impl_ != nullptr; }        ///< false for Tensor()
  const Shape& shape() const { return impl_->sizes; }      ///< the sizes of the dims
  const Shape& strides() const { return impl_->strides; }  ///< in elements
  int64_t offset() const { return impl_->offset; }         ///< in the storage, in elements
  /// The rank: how many dims.
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  /// Size of one dim; negative dims count from the end.
  int64_t size(int64_t dim) const;
  int64_t numel() const { return dlf::numel(impl_->sizes); }  ///< the element count
  DType dtype() const { return impl_->dtype; }                ///< the element type
  Device device() const { return impl_->storage->device(); }  ///< where the storage lives
  /// The bytes, shared with every view of them.
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  bool is_contiguous() const;  ///< row-major and dense
  /// 4-D with exactly the strides of a dense channels-last buffer, those of size-1 dims too:
  /// a [N, 1, H, W] or [N, C, 1, 1] tensor is both dense layouts, and its strides say which
  /// one it was made in (as PyTorch's suggest_memory_format reads them).
  bool is_channels_last() const;
  /// The layout an op's output keeps: channels_last when is_channels_last(), or when the
  /// strides run in channels-last order without being dense (a slice of channels of such a
  /// tensor); else contiguous.
  MemoryFormat memory_format() const;
  /// numel() times the element size: the bytes of the elements (not of the storage).
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }

  /// Pointer to the first element. T must match the dtype; the device must hold data.
  template <typename T>
  T* data() const {
    check_access(dtype_of<T>());
    return static_cast<T*>(impl_->storage->data()) + impl_->offset;
  }
  void* raw_data() const;  ///< data() without the type: the first element's byte
  /// The value of a one-element tensor, converted to T.
  template <typename T>
  T item() const;
  /// All elements in row-major order, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;

  // Views: share storage, no copy (each goes through dispatch, so autograd and capture see it).
  Tensor view(const Shape& shape) const;     ///< requires compatible strides; one dim may be -1
  Tensor reshape(const Shape& shape) const;  ///< a view when possible, else a copy
  Tensor permute(const Shape& dims) const;   ///< dims reordered: dim i is dims[i]
  Tensor transpose(int64_t dim0, int64_t dim1) const;  ///< two dims swapped
  /// Indices start, start + step, ... below end of `dim`.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  /// slice(dim, start, start + length).
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  ///< removes `dim`
  Tensor expand(const Shape& shape) const;          ///< broadcast; -1 keeps a dim
  Tensor squeeze(int64_t dim) const;                ///< drops `dim`, which must have size 1
  Tensor squeeze() const;                           ///< drops every size-1 dim
  Tensor unsqueeze(int64_t dim) const;              ///< a new size-1 dim at `dim`
  /// Dims start_dim..end_dim merged into one (a view when the strides allow, else a copy).
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;

  /// t[i]: the view of index i of dim 0 (libtorch's operator[]).
  Tensor operator[](int64_t index) const { return select(0, index); }
  /// t.index({0, Slice{1, 3}, Slice{}}): Python's t[0, 1:3, :] — integers select (removing the
  /// dim), slices narrow; dims not named are kept whole. Views, no copy.
  Tensor index(std::initializer_list<TensorIndex> indices) const;

  /// Math as methods, as in PyTorch ((p - y).pow(2).mean()): t.exp() is exp(t) of
  /// core/ops/, and so on; autograd records them like the functions.
  ///@{
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
  ///@}
  /// Reductions over `dims` (all when empty), keeping them as size 1 with keepdim.
  ///@{
  Tensor sum(const Shape& dims = {}, bool keepdim = false) const;
  Tensor mean(const Shape& dims = {}, bool keepdim = false) const;
  Tensor max(const Shape& dims = {}, bool keepdim = false) const;
  ///@}
  /// The index of the largest element along `dim` (i64).
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  /// Comparisons, as the functions of core/ops/elementwise.h and the operators (a.eq(b) is
  /// a == b): bool tensors, broadcasting; a scalar takes the tensor's dtype.
  ///@{
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor eq(double other) const;
  Tensor ne(double other) const;
  Tensor lt(double other) const;
  Tensor le(double other) const;
  Tensor gt(double other) const;
  Tensor ge(double other) const;
  ///@}

  Tensor contiguous() const;  ///< self if already contiguous, else a contiguous copy
  /// Self if already dense in `format` (is_channels_last() for channels_last), else a copy.
  Tensor contiguous(MemoryFormat format) const;
  Tensor clone() const;            ///< a contiguous copy
  Tensor to(DType dtype) const;    ///< converted (self if already of that dtype)
  Tensor to(Device device) const;  ///< copied to `device` (self if already there)

  /// Copies `src` (same shape, broadcastable, any dtype) into this tensor in place.
  Tensor& copy_(const Tensor& src);
  /// Points every handle of this tensor at `other`'s data (storage, shape, dtype), keeping
  /// its autograd state: how a module moves its parameters to another device or dtype.
  void set_data(const Tensor& other) const;

  std::string str() const;  ///< shape, dtype, device and the values, for people

  // Autograd (implemented by autograd/, floor 3).
  bool requires_grad() const;  ///< whether backward computes a gradient for it
  /// Marks a leaf as needing a gradient; returns *this.
  const Tensor& requires_grad_(bool value = true) const;
  /// True unless the tensor was made by a recorded op.
  bool is_leaf() const;
  /// The accumulated gradient of a leaf (undefined until backward reaches it).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;  ///< replaces grad() (undefined: none)
  /// Backward from this tensor; `grad` may be omitted for one-element tensors.
  void backward(const Tensor& grad = {}, bool retain_graph = false,
                bool create_graph = false) const;
  /// The same data, cut from the graph.
  Tensor detach() const;
  /// Runs `hook` on this tensor's gradient when it is computed; its result replaces it.
  void register_hook(std::function<Tensor(const Tensor&)> hook) const;
  /// Runs `hook` when a leaf's gradient is final for this backward (DDP rides on this).
  void register_grad_ready_hook(std::function<void(const Tensor&)> hook) const;

  /// The tensor itself, shared by its handles.
  TensorImpl* impl() const { return impl_.get(); }
  /// Whether both handles are the same tensor (not merely equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  /// The autograd state (null until autograd needs it), for autograd/.
  const std::shared_ptr<AutogradMeta>& autograd_meta() const { return impl_->autograd; }
  /// Replaces the autograd state, for autograd/.
  void set_autograd_meta(std::shared_ptr<AutogradMeta> meta) const {
    impl_->autograd = std::move(meta);
  }

 private:
  void check_access(DType requested) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);  ///< prints t.str()

namespace detail {
/// Called with the tensor whenever code outside an op's kernel touches its values on the host
/// (data(), item(), to_vector()), on this thread: graph capture refuses that, as what the step
/// does then depends on data the graph cannot see. Null: none.
using HostReadHook = void (*)(const Tensor& read);
void set_host_read_hook(HostReadHook hook);
/// Whether this thread is inside an op's kernel (launch_op()).
bool running_kernel();
}  // namespace detail

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
