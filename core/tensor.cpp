#include <dlf/core/tensor.h>
#include <dlf/device/device_memory.h>
#include <algorithm>

#include <ostream>

#include "core/kernels/dtype_dispatch.h"

namespace dlf {

Storage::Storage(size_t nbytes, Device device)
    : data_(allocator_for(device).allocate(nbytes, MemoryScope::current())),
      nbytes_(nbytes),
      device_(device),
      category_(MemoryScope::current()) {}

Storage::Storage(void* data, size_t nbytes, std::shared_ptr<const void> owner, Device device)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      category_(MemoryScope::current()),
      owner_(std::move(owner)) {}

Storage::~Storage() {
  if (!released_ && !owner_) allocator_for(device_).deallocate(data_, nbytes_, category_);
}

void Storage::release() {
  if (released_) return;
  DLF_CHECK(!owner_, "a borrowed storage (a memory-mapped file's bytes) cannot be released");
  allocator_for(device_).deallocate(data_, nbytes_, category_);
  data_ = nullptr;
  released_ = true;
}

void Storage::materialize() {
  if (!released_) return;
  data_ = allocator_for(device_).allocate(nbytes_, category_);
  released_ = false;
}

void Storage::set_category(MemoryCategory category) {
  if (category == category_) return;
  if (!owner_) allocator_for(device_).recategorize(nbytes_, category_, category);
  category_ = category;
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape sizes, Shape strides, int64_t offset,
               DType dtype)
    : impl_(std::make_shared<TensorImpl>(TensorImpl{
          std::move(storage), std::move(sizes), std::move(strides), offset, dtype, {}})) {}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, MemoryFormat format) {
  for (int64_t d : shape) DLF_CHECK(d >= 0, "negative size in shape ", shape_str(shape));
  auto storage =
      std::make_shared<Storage>(static_cast<size_t>(dlf::numel(shape)) * dtype_size(dtype), device);
  return Tensor(std::move(storage), shape, dense_strides(shape, format), 0, dtype);
}

void Tensor::set_data(const Tensor& other) const {
  impl_->storage = other.impl_->storage;
  impl_->sizes = other.impl_->sizes;
  impl_->strides = other.impl_->strides;
  impl_->offset = other.impl_->offset;
  impl_->dtype = other.impl_->dtype;
}

int64_t Tensor::size(int64_t d) const {
  DLF_CHECK(dim() > 0, "size(", d, ") of a scalar: it has no dimensions");
  return shape()[wrap_dim(d, dim())];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (shape()[d] == 1) continue;
    if (strides()[d] != expected) return false;
    expected *= shape()[d];
  }
  return true;
}

bool Tensor::is_channels_last() const {
  return dim() == 4 && strides() == dense_strides(shape(), MemoryFormat::channels_last);
}

MemoryFormat Tensor::memory_format() const {
  if (is_channels_last()) return MemoryFormat::channels_last;
  if (dim() != 4 || is_contiguous()) return MemoryFormat::contiguous;
  const Shape& s = strides();
  const bool all_sizes =
      std::all_of(shape().begin(), shape().end(), [](int64_t n) { return n > 1; });
  return all_sizes && s[1] < s[3] && s[3] < s[2] && s[2] < s[0] ? MemoryFormat::channels_last
                                                                : MemoryFormat::contiguous;
}

namespace {
thread_local detail::HostReadHook host_read_hook = nullptr;
}  // namespace

void detail::set_host_read_hook(HostReadHook hook) { host_read_hook = hook; }

void Tensor::check_access(DType requested) const {
  DLF_CHECK(defined(), "access to an undefined tensor");
  if (host_read_hook != nullptr && !detail::running_kernel()) host_read_hook(*this);
  DLF_CHECK(requested == dtype(), "data<", dtype_name(requested), ">() on a tensor of dtype ",
            dtype_name(dtype()));
  DLF_CHECK(device().has_data(), "the data of a ", device().str(), " tensor cannot be read");
}

void* Tensor::raw_data() const {
  check_access(dtype());
  return static_cast<char*>(storage()->data()) +
         offset() * static_cast<int64_t>(dtype_size(dtype()));
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = contiguous();
  std::vector<T> out(static_cast<size_t>(c.numel()));
  kernels::visit_dtype(dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = c.data<S>();
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<T>(static_cast<kernels::acc_t<S>>(p[i]));
  });
  return out;
}

template <typename T>
T Tensor::item() const {
  DLF_CHECK(numel() == 1, "item() needs a tensor with one element, got shape ", shape_str(shape()));
  return to_vector<T>()[0];
}

template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int32_t Tensor::item<int32_t>() const;
template bool Tensor::item<bool>() const;
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace dlf
