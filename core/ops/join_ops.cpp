// Joining and splitting along a dim: cat and split are ops (split's pieces are views, and one
// op for all of them makes its backward one cat); stack, chunk and unbind are built on them.
#include <dlf/core/op.h>
#include <dlf/core/ops/join.h>

#include <numeric>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/strided_copy.h"

namespace dlf {
namespace {

std::string shapes_str(Inputs in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + shape_str(in[i].shape());
  return s;
}

const OpDef& cat_op = register_op({
    .name = "cat",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      DLF_CHECK(!in.empty(), "cat: needs at least one tensor");
      const Tensor& first = in[0];
      DLF_CHECK(first.dim() > 0, "cat: cannot join rank-0 tensors (shapes ", shapes_str(in), ")");
      const int64_t d = wrap_dim(a.i("dim"), first.dim());
      Shape out = first.shape();
      out[d] = 0;
      for (const Tensor& t : in) {
        DLF_CHECK(t.dtype() == first.dtype(), "cat: dtypes differ (", dtype_name(first.dtype()),
                  " and ", dtype_name(t.dtype()), ") for shapes ", shapes_str(in));
        bool same = t.dim() == first.dim();
        for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.shape()[k] == out[k];
        DLF_CHECK(same, "cat: shapes ", shapes_str(in), " differ outside dim ", d);
        out[d] += t.shape()[d];
      }
      return {{out, first.dtype(), first.memory_format()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          const Tensor& y = out[0];
          const int64_t d = wrap_dim(a.i("dim"), y.dim());
          int64_t start = 0;
          for (const Tensor& t : in) {
            Tensor region(y.storage(), t.shape(), y.strides(), start * y.strides()[d], y.dtype());
            kernels::strided_copy(region, t);
            start += t.shape()[d];
          }
        },
});

const OpDef& split_op = register_op({
    .name = "split",
    .view = [](Inputs in, const Attrs& a) -> std::vector<Tensor> {
      const Tensor& x = in[0];
      DLF_CHECK(x.dim() > 0, "split: cannot split a rank-0 tensor");
      const int64_t d = wrap_dim(a.i("dim"), x.dim());
      const std::vector<int64_t>& sizes = a.ints("sizes");
      for (int64_t s : sizes) DLF_CHECK(s >= 0, "split: negative size in ", shape_str(sizes));
      DLF_CHECK(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == x.shape()[d],
                "split: sizes ", shape_str(sizes), " do not add up to ", x.shape()[d],
                ", the size of dim ", d, " of shape ", shape_str(x.shape()));
      std::vector<Tensor> pieces;
      pieces.reserve(sizes.size());
      int64_t start = 0;
      for (int64_t s : sizes) {
        Shape shape = x.shape();
        shape[d] = s;
        pieces.emplace_back(x.storage(), shape, x.strides(), x.offset() + start * x.strides()[d],
                            x.dtype());
        start += s;
      }
      return pieces;
    },
});

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  DLF_CHECK(!tensors.empty(), "cat: needs at least one tensor, got an empty list");
  return dispatch1(cat_op, tensors, {{"dim", dim}});
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  DLF_CHECK(!tensors.empty(), "stack: needs at least one tensor, got an empty list");
  for (const Tensor& t : tensors) {
    DLF_CHECK(t.shape() == tensors[0].shape(), "stack: shapes ", shape_str(tensors[0].shape()),
              " and ", shape_str(t.shape()), " differ");
  }
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(d));
  return cat(expanded, d);
}

std::vector<Tensor> split_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  if (sizes.empty()) {  // no piece: an op without outputs would have no gradient to record
    DLF_CHECK(x.shape()[wrap_dim(dim, x.dim())] == 0, "split: no sizes for dim ", dim, " of shape ",
              shape_str(x.shape()));
    return {};
  }
  return dispatch(split_op, {x}, {{"dim", dim}, {"sizes", sizes}});
}

std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim) {
  const int64_t d = wrap_dim(dim, x.dim());
  const int64_t n = x.shape()[d];
  DLF_CHECK(size > 0 || (size == 0 && n == 0), "split: size must be positive, got ", size,
            " for dim ", d, " of shape ", shape_str(x.shape()));
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += size) sizes.push_back(std::min(size, n - start));
  if (sizes.empty()) sizes.push_back(0);  // an empty dim splits into one empty piece
  return split_sizes(x, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  DLF_CHECK(chunks > 0, "chunk: the number of chunks must be positive, got ", chunks);
  const int64_t d = wrap_dim(dim, x.dim());
  const int64_t n = x.shape()[d];
  if (n == 0) return split_sizes(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  DLF_CHECK(x.dim() > 0, "unbind: cannot unbind a rank-0 tensor");
  const int64_t d = wrap_dim(dim, x.dim());
  std::vector<Tensor> pieces =
      split_sizes(x, std::vector<int64_t>(static_cast<size_t>(x.shape()[d]), 1), d);
  for (Tensor& piece : pieces) piece = piece.squeeze(d);
  return pieces;
}

}  // namespace dlf
