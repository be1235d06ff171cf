// View ops: new sizes/strides/offset over the same storage, no data moved.
#include <dlf/core/op.h>

#include <algorithm>
#include <numeric>
#include <optional>

namespace dlf {
namespace {

Tensor alias(const Tensor& x, Shape sizes, Shape strides, int64_t offset) {
  return Tensor(x.storage(), std::move(sizes), std::move(strides), offset, x.dtype());
}

// Strides that view `x` as `shape` without copying, if any exist: dims may be split or
// merged only where the merged dims are contiguous with each other.
std::optional<Shape> view_strides(const Tensor& x, const Shape& shape) {
  const Shape& old_shape = x.shape();
  const Shape& old_strides = x.strides();
  if (old_shape.empty() || x.numel() == 0) return contiguous_strides(shape);
  Shape strides(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

const OpDef& view_op = register_op({
    .name = "view",
    .view = [](Inputs in, const Attrs& a) -> std::vector<Tensor> {
      const Tensor& x = in[0];
      const Shape& shape = a.ints("shape");
      DLF_CHECK(numel(shape) == x.numel(), "view: shape ", shape_str(shape), " has ", numel(shape),
                " elements, the tensor of shape ", shape_str(x.shape()), " has ", x.numel());
      auto strides = view_strides(x, shape);
      DLF_CHECK(strides.has_value(), "view: a tensor of shape ", shape_str(x.shape()),
                " and strides ", shape_str(x.strides()), " cannot be viewed as ", shape_str(shape),
                " without a copy; use reshape()");
      return {alias(x, shape, *strides, x.offset())};
    },
});

const OpDef& permute_op = register_op({
    .name = "permute",
    .view = [](Inputs in, const Attrs& a) -> std::vector<Tensor> {
      const Tensor& x = in[0];
      const Shape& dims = a.ints("dims");
      DLF_CHECK(static_cast<int64_t>(dims.size()) == x.dim(), "permute: ", shape_str(dims),
                " does not name each of the ", x.dim(), " dims of a tensor of shape ",
                shape_str(x.shape()));
      Shape sizes(dims.size()), strides(dims.size());
      std::vector<bool> seen(dims.size(), false);
      for (size_t i = 0; i < dims.size(); ++i) {
        int64_t d = wrap_dim(dims[i], x.dim());
        DLF_CHECK(!seen[d], "permute: dim ", d, " repeats in ", shape_str(dims));
        seen[d] = true;
        sizes[i] = x.shape()[d];
        strides[i] = x.strides()[d];
      }
      return {alias(x, sizes, strides, x.offset())};
    },
});

const OpDef& slice_op = register_op({
    .name = "slice",
    .view = [](Inputs in, const Attrs& a) -> std::vector<Tensor> {
      const Tensor& x = in[0];
      int64_t d = wrap_dim(a.i("dim"), x.dim());
      int64_t start = a.i("start"), end = a.i("end"), step = a.i("step");
      DLF_CHECK(step > 0, "slice: step must be positive, got ", step);
      int64_t n = x.shape()[d];
      DLF_CHECK(0 <= start && start <= end && end <= n, "slice: range [", start, ", ", end,
                ") is out of bounds for dim ", d, " of size ", n, " in shape ",
                shape_str(x.shape()));
      Shape sizes = x.shape(), strides = x.strides();
      sizes[d] = (end - start + step - 1) / step;
      strides[d] *= step;
      return {alias(x, sizes, strides, x.offset() + start * x.strides()[d])};
    },
});

const OpDef& expand_op = register_op({
    .name = "expand",
    .view = [](Inputs in, const Attrs& a) -> std::vector<Tensor> {
      const Tensor& x = in[0];
      const Shape& shape = a.ints("shape");
      DLF_CHECK(shape.size() >= x.shape().size(), "expand: cannot expand shape ",
                shape_str(x.shape()), " to fewer dims ", shape_str(shape));
      const size_t lead = shape.size() - x.shape().size();
      Shape strides(shape.size(), 0);
      for (size_t i = 0; i < x.shape().size(); ++i) {
        int64_t have = x.shape()[i], want = shape[lead + i];
        DLF_CHECK(want >= 0, "expand: negative size in ", shape_str(shape));
        DLF_CHECK(have == want || have == 1, "expand: shape ", shape_str(x.shape()),
                  " cannot be broadcast to ", shape_str(shape));
        strides[lead + i] = have == want ? x.strides()[i] : 0;
      }
      return {alias(x, shape, strides, x.offset())};
    },
});

Shape resolve_shape(const Shape& shape, int64_t total) {
  Shape out = shape;
  auto infer = std::find(out.begin(), out.end(), -1);
  if (infer != out.end()) {
    DLF_CHECK(std::count(out.begin(), out.end(), -1) == 1, "only one dim may be -1 in ",
              shape_str(shape));
    int64_t known = -numel(out);
    DLF_CHECK(known > 0 && total % known == 0, "shape ", shape_str(shape), " is invalid for ",
              total, " elements");
    *infer = total / known;
  }
  return out;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  return dispatch1(view_op, {*this}, {{"shape", resolve_shape(shape, numel())}});
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape target = resolve_shape(shape, numel());
  DLF_CHECK(dlf::numel(target) == numel(), "reshape: shape ", shape_str(shape),
            " is invalid for a tensor of shape ", shape_str(this->shape()));
  const bool viewable = view_strides(*this, target).has_value();
  return (viewable ? *this : contiguous()).view(target);
}

Tensor Tensor::permute(const Shape& dims) const {
  return dispatch1(permute_op, {*this}, {{"dims", dims}});
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  Shape dims(dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[wrap_dim(dim0, dim())], dims[wrap_dim(dim1, dim())]);
  return permute(dims);
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  int64_t d = wrap_dim(dim, this->dim());
  int64_t n = shape()[d];
  auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  start = clamp(start);
  end = std::max(start, clamp(end));
  return dispatch1(slice_op, {*this}, {{"dim", d}, {"start", start}, {"end", end}, {"step", step}});
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  int64_t d = wrap_dim(dim, this->dim());
  DLF_CHECK(start >= 0 && length >= 0 && start + length <= shape()[d], "narrow: [", start, ", ",
            start + length, ") is out of bounds for dim ", d, " of shape ", shape_str(shape()));
  return dispatch1(slice_op, {*this},
                   {{"dim", d}, {"start", start}, {"end", start + length}, {"step", int64_t{1}}});
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  int64_t d = wrap_dim(dim, this->dim());
  int64_t n = shape()[d];
  DLF_CHECK(index >= -n && index < n, "select: index ", index, " is out of range for dim ", d,
            " of shape ", shape_str(shape()));
  if (index < 0) index += n;
  return narrow(d, index, 1).squeeze(d);
}

Tensor Tensor::expand(const Shape& shape) const {
  Shape target = shape;
  const size_t lead = target.size() - std::min(target.size(), this->shape().size());
  for (size_t i = lead; i < target.size(); ++i) {
    if (target[i] == -1) target[i] = this->shape()[i - lead];
  }
  return dispatch1(expand_op, {*this}, {{"shape", target}});
}

Tensor Tensor::squeeze(int64_t dim) const {
  int64_t d = wrap_dim(dim, this->dim());
  if (shape()[d] != 1) return *this;
  Shape s = shape();
  s.erase(s.begin() + d);
  return view(s);
}

Tensor Tensor::squeeze() const {
  Shape s;
  for (int64_t n : shape()) {
    if (n != 1) s.push_back(n);
  }
  return view(s);
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  int64_t d = wrap_dim(dim, this->dim() + 1);
  Shape s = shape();
  s.insert(s.begin() + d, 1);
  return view(s);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  int64_t s = wrap_dim(start_dim, dim()), e = wrap_dim(end_dim, dim());
  DLF_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape out(shape().begin(), shape().begin() + s);
  out.push_back(numel() == 0 ? 0 : dlf::numel(Shape(shape().begin() + s, shape().begin() + e + 1)));
  out.insert(out.end(), shape().begin() + e + 1, shape().end());
  return reshape(out);
}

}  // namespace dlf
