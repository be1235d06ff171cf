#include "autograd/grad_cases.h"

#include <map>
#include <set>

namespace dlf::test {
namespace {
std::map<std::string, std::vector<GradCase>>& table() {
  static std::map<std::string, std::vector<GradCase>> t;
  return t;
}
}  // namespace

bool add_grad_cases(const std::string& family, std::vector<GradCase> cases) {
  auto& list = table()[family];
  list.insert(list.end(), cases.begin(), cases.end());
  return true;
}

void run_grad_cases(const std::string& family) {
  const auto& cases = table()[family];
  REQUIRE(!cases.empty());
  for (const GradCase& c : cases) {
    INFO(c.op, ": ", c.name);
    autograd::GradcheckResult r = autograd::gradcheck(c.fn, c.inputs(), c.options);
    INFO(r.str());
    CHECK(r.ok);
    CHECK(r.elements > 0);
  }
}

std::vector<std::string> covered_ops() {
  std::set<std::string> ops;
  for (const auto& [family, cases] : table()) {
    for (const GradCase& c : cases) ops.insert(c.op);
  }
  return {ops.begin(), ops.end()};
}

std::vector<Tensor> leaves(const std::vector<Shape>& shapes, uint64_t seed) {
  Generator g(seed);
  std::vector<Tensor> out;
  for (const Shape& s : shapes) {
    out.push_back(randn(s, {.dtype = DType::f64}, &g));
    out.back().requires_grad_();
  }
  return out;
}

Tensor transposed_leaf(const Shape& shape, uint64_t seed) {
  Shape flipped(shape.rbegin(), shape.rend());
  Generator g(seed);
  Shape reverse(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) reverse[i] = static_cast<int64_t>(shape.size() - 1 - i);
  Tensor t = randn(flipped, {.dtype = DType::f64}, &g).permute(reverse);
  t.requires_grad_();
  return t;
}

}  // namespace dlf::test
