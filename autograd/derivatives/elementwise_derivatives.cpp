// Backward of the element-wise ops, composed of dispatched ops so that it can be
// differentiated again (create_graph). Broadcast inputs get their gradient summed back.
#include <dlf/autograd/backward.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>

#include <numbers>

#include "autograd/derivatives/activation_grad.h"
#include "autograd/derivatives/sum_to.h"

namespace dlf::autograd {
namespace {

using Grads = std::vector<Tensor>;
using C = const BackwardContext&;

const Shape& shape_of(C c, int i) { return c.input_meta(i).shape; }
Tensor as_float(const Tensor& mask, DType dtype) { return mask.to(dtype); }
Tensor zero_like_scalar(const Tensor& g) {
  return zeros({}, {.dtype = g.dtype(), .device = g.device()});
}

void unary(const std::string& op, std::vector<int> save_in, std::vector<int> save_out,
           Tensor (*formula)(C, const Tensor& g)) {
  register_backward(op, {.save_inputs = std::move(save_in),
                         .save_outputs = std::move(save_out),
                         .fn = [formula](C c) -> Grads { return {formula(c, c.grad())}; }});
}

// A binary op's gradients before broadcasting is undone.
void binary(const std::string& op, std::vector<int> save_in, std::vector<int> save_out,
            Tensor (*grad_a)(C, const Tensor& g), Tensor (*grad_b)(C, const Tensor& g)) {
  register_backward(op, {.save_inputs = std::move(save_in),
                         .save_outputs = std::move(save_out),
                         .fn = [grad_a, grad_b](C c) -> Grads {
                           const Tensor g = c.grad();
                           Grads out(2);
                           if (c.needs_grad(0)) out[0] = sum_to(grad_a(c, g), shape_of(c, 0));
                           if (c.needs_grad(1)) out[1] = sum_to(grad_b(c, g), shape_of(c, 1));
                           return out;
                         }});
}

// Half of the gradient to each side on ties, as PyTorch does.
Tensor choose(const Tensor& wins, const Tensor& ties, const Tensor& g) {
  return g * (as_float(wins, g.dtype()) + as_float(ties, g.dtype()) * 0.5);
}

[[maybe_unused]] const bool registered = [] {
  unary("neg", {}, {}, [](C, const Tensor& g) { return -g; });
  unary("exp", {}, {0}, [](C c, const Tensor& g) { return g * c.output(0); });
  unary("log", {0}, {}, [](C c, const Tensor& g) { return g / c.input(0); });
  unary("sqrt", {}, {0}, [](C c, const Tensor& g) { return g * 0.5 / c.output(0); });
  unary("rsqrt", {}, {0}, [](C c, const Tensor& g) {
    const Tensor& y = c.output(0);
    return g * (y * y * y) * -0.5;
  });
  unary("abs", {0}, {}, [](C c, const Tensor& g) {
    const Tensor& x = c.input(0);
    return g * (as_float(gt(x, zero_like_scalar(x)), x.dtype()) -
                as_float(lt(x, zero_like_scalar(x)), x.dtype()));
  });
  unary("tanh", {}, {0}, [](C c, const Tensor& g) {
    const Tensor& y = c.output(0);
    return g * (1.0 - y * y);
  });
  unary("sigmoid", {}, {0}, [](C c, const Tensor& g) {
    const Tensor& y = c.output(0);
    return g * y * (1.0 - y);
  });
  unary("relu", {}, {0}, [](C c, const Tensor& g) { return relu_grad(g, c.output(0)); });
  unary("erf", {0}, {}, [](C c, const Tensor& g) {
    const Tensor& x = c.input(0);
    return g * exp(-(x * x)) * (2 * std::numbers::inv_sqrtpi);
  });
  unary("sin", {0}, {}, [](C c, const Tensor& g) { return g * cos(c.input(0)); });
  unary("cos", {0}, {}, [](C c, const Tensor& g) { return -g * sin(c.input(0)); });
  unary("tan", {}, {0}, [](C c, const Tensor& g) { return g * (1.0 + square(c.output(0))); });
  unary("log1p", {0}, {}, [](C c, const Tensor& g) { return g / (c.input(0) + 1.0); });
  unary("expm1", {}, {0}, [](C c, const Tensor& g) { return g * (c.output(0) + 1.0); });
  unary("square", {0}, {}, [](C c, const Tensor& g) { return g * c.input(0) * 2.0; });
  unary("reciprocal", {}, {0}, [](C c, const Tensor& g) { return -g * square(c.output(0)); });
  // Piecewise constant: zero gradient, as PyTorch gives.
  for (const char* op : {"sign", "floor", "ceil", "round"})
    unary(op, {}, {}, [](C, const Tensor& g) { return zeros_like(g); });
  unary("clamp", {0}, {}, [](C c, const Tensor& g) {
    const Tensor& x = c.input(0);
    const TensorOptions like{.dtype = x.dtype(), .device = x.device()};
    const Tensor inside = as_float(ge(x, full({}, c.attrs().f("min"), like)), g.dtype()) *
                          as_float(le(x, full({}, c.attrs().f("max"), like)), g.dtype());
    return g * inside;
  });
  unary("gelu", {0}, {}, [](C c, const Tensor& g) {
    return gelu_grad(g, c.input(0), c.attrs().s("approximation") == "tanh");
  });
  unary("silu", {0}, {}, [](C c, const Tensor& g) { return silu_grad(g, c.input(0)); });
  unary("add_scalar", {}, {}, [](C, const Tensor& g) { return g; });
  unary("mul_scalar", {}, {}, [](C c, const Tensor& g) { return g * c.attrs().f("scalar"); });
  unary("pow_scalar", {0}, {}, [](C c, const Tensor& g) {
    const double e = c.attrs().f("scalar");
    return g * pow(c.input(0), e - 1) * e;
  });

  binary(
      "add", {}, {}, [](C, const Tensor& g) { return g; }, [](C, const Tensor& g) { return g; });
  binary(
      "sub", {}, {}, [](C, const Tensor& g) { return g; }, [](C, const Tensor& g) { return -g; });
  binary(
      "mul", {0, 1}, {}, [](C c, const Tensor& g) { return g * c.input(1); },
      [](C c, const Tensor& g) { return g * c.input(0); });
  binary(
      "div", {0, 1}, {}, [](C c, const Tensor& g) { return g / c.input(1); },
      [](C c, const Tensor& g) {
        const Tensor& b = c.input(1);
        return -g * c.input(0) / (b * b);
      });
  // d/db a^b = a^b log a, taken as 0 where a = 0 and b >= 0 (the limit), as PyTorch does.
  binary(
      "pow", {0, 1}, {0},
      [](C c, const Tensor& g) { return g * c.input(1) * pow(c.input(0), c.input(1) - 1.0); },
      [](C c, const Tensor& g) {
        const Tensor& a = c.input(0);
        const Tensor zero = zero_like_scalar(a);
        Tensor limit = where(eq(a, zero), ge(c.input(1), zero), eq(a, zero));
        return masked_fill(g * c.output(0) * log(a), limit, 0);
      });
  binary(
      "maximum", {0, 1}, {},
      [](C c, const Tensor& g) {
        return choose(gt(c.input(0), c.input(1)), eq(c.input(0), c.input(1)), g);
      },
      [](C c, const Tensor& g) {
        return choose(lt(c.input(0), c.input(1)), eq(c.input(0), c.input(1)), g);
      });
  binary(
      "minimum", {0, 1}, {},
      [](C c, const Tensor& g) {
        return choose(lt(c.input(0), c.input(1)), eq(c.input(0), c.input(1)), g);
      },
      [](C c, const Tensor& g) {
        return choose(gt(c.input(0), c.input(1)), eq(c.input(0), c.input(1)), g);
      });

  register_backward("swiglu", {.save_inputs = {0, 1}, .fn = [](C c) -> Grads {
                                 const Tensor &g = c.grad(), &a = c.input(0), &b = c.input(1);
                                 Tensor da, db;
                                 if (grad_enabled()) {  // differentiable ops for a second order
                                   da = silu_grad(g * b, a);
                                   db = g * silu(a);
                                 } else {
                                   static const OpDef& fused = find_op("swiglu_backward");
                                   const std::vector<Tensor> d = dispatch(fused, {g, a, b});
                                   da = d[0];
                                   db = d[1];
                                 }
                                 Grads out(2);
                                 if (c.needs_grad(0)) out[0] = sum_to(da, shape_of(c, 0));
                                 if (c.needs_grad(1)) out[1] = sum_to(db, shape_of(c, 1));
                                 return out;
                               }});
  register_backward("where", {.save_inputs = {0}, .fn = [](C c) -> Grads {
                                const Tensor g = c.grad();
                                const Tensor zero = zero_like_scalar(g);
                                Grads out(3);
                                if (c.needs_grad(1))
                                  out[1] = sum_to(where(c.input(0), g, zero), shape_of(c, 1));
                                if (c.needs_grad(2))
                                  out[2] = sum_to(where(c.input(0), zero, g), shape_of(c, 2));
                                return out;
                              }});
  register_backward("masked_fill", {.save_inputs = {1}, .fn = [](C c) -> Grads {
                                      return {masked_fill(c.grad(), c.input(1), 0), Tensor()};
                                    }});
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) register_nondifferentiable(op);
  register_nondifferentiable("gelu_backward");  // used only for first derivatives
  register_nondifferentiable("silu_backward");
  register_nondifferentiable("swiglu_backward");
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
