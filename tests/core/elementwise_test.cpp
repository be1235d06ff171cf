#include <cmath>
#include <limits>

#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;
using dlf::test::OpCheck;

namespace {

using In = std::vector<Tensor>;

Tensor f64(const std::vector<double>& values, const Shape& shape = {2, 3}) {
  return from_vector<double>(values, shape);
}
Tensor b8(const std::vector<bool>& values, const Shape& shape = {2, 3}) {
  return from_vector<bool>(values, shape);
}

const std::vector<double> kSigned{-2, -0.5, 0, 0.5, 1, 3};
const std::vector<double> kPositive{0.25, 0.5, 1, 2, 4, 9};
// Halves and quarters: floor, ceil and round at and between their steps (round halves to even).
const std::vector<double> kHalves{-1.5, -0.5, 0.25, 0.5, 1.5, 2.5};
// bf16-exact operands for the binary ops.
const std::vector<double> kA{1, 2, 3, -1, 0.5, 4};
const std::vector<double> kB{2, 0.5, -1, 3, 4, 0.25};

/// One row: the op on f64 inputs gives `expected` (hand-computed) of `shape`; check_op also
/// runs it in f32, in bf16 (within bf16_tol) and on strided inputs.
struct Case {
  const char* name;
  test::OpFn fn;
  In inputs;
  std::vector<double> expected;
  Shape shape = {2, 3};
  OpCheck check = {.bf16_tol = 2e-2};
};

void run(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SUBCASE(c.name) {
      Tensor ref = check_op(c.fn, c.inputs, c.check);
      check_close(ref, c.expected, c.shape, 1e-9, 1e-9);
    }
  }
}

// Comparisons and selects of bf16-exact values are exact in bf16 too.
constexpr OpCheck kExact{.bf16_tol = 1e-12};
// oneDNN's f32 log (contiguous inputs from kParallelGrain elements) is accurate to ~3e-6
// absolute, libm's (the loops) to an ulp: the layouts agree to 1e-5 (checked below), not to
// check_op's 1e-6.
constexpr OpCheck kLog{.bf16_tol = 3e-2, .strided = false};

}  // namespace

TEST_CASE("unary ops: hand-computed values") {
  // clang-format off
  run({
    {"neg",       [](const In& x) { return -x[0]; },           {f64(kSigned)},   {2, 0.5, 0, -0.5, -1, -3}},
    {"exp",       [](const In& x) { return dlf::exp(x[0]); },  {f64(kSigned)},   {0.1353352832, 0.6065306597, 1, 1.648721271, 2.718281828, 20.08553692}},
    {"log",       [](const In& x) { return dlf::log(x[0]); },  {f64(kPositive)}, {-1.386294361, -0.6931471806, 0, 0.6931471806, 1.386294361, 2.197224577}, {2, 3}, kLog},
    {"sqrt",      [](const In& x) { return dlf::sqrt(x[0]); }, {f64(kPositive)}, {0.5, 0.7071067812, 1, 1.414213562, 2, 3}},
    {"rsqrt",     [](const In& x) { return rsqrt(x[0]); },     {f64(kPositive)}, {2, 1.414213562, 1, 0.7071067812, 0.5, 0.3333333333}},
    {"abs",       [](const In& x) { return dlf::abs(x[0]); },  {f64(kSigned)},   {2, 0.5, 0, 0.5, 1, 3}},
    {"tanh",      [](const In& x) { return dlf::tanh(x[0]); }, {f64(kSigned)},   {-0.9640275801, -0.4621171573, 0, 0.4621171573, 0.761594156, 0.9950547537}},
    {"sigmoid",   [](const In& x) { return sigmoid(x[0]); },   {f64(kSigned)},   {0.119202922, 0.3775406688, 0.5, 0.6224593312, 0.7310585786, 0.9525741268}},
    {"relu",      [](const In& x) { return relu(x[0]); },      {f64(kSigned)},   {0, 0, 0, 0.5, 1, 3}},
    {"gelu erf",  [](const In& x) { return gelu(x[0]); },      {f64(kSigned)},   {-0.0455002639, -0.1542687694, 0, 0.3457312306, 0.8413447461, 2.995950306}},
    {"gelu tanh", [](const In& x) { return gelu(x[0], GeluApproximation::tanh); },
                                                               {f64(kSigned)},   {-0.04540230591, -0.1542859902, 0, 0.3457140098, 0.8411919906, 2.996362608}},
    {"silu",      [](const In& x) { return silu(x[0]); },      {f64(kSigned)},   {-0.238405844, -0.1887703344, 0, 0.3112296656, 0.7310585786, 2.857722380}},
    {"sin",       [](const In& x) { return dlf::sin(x[0]); },  {f64(kSigned)},   {-0.9092974268, -0.4794255386, 0, 0.4794255386, 0.8414709848, 0.1411200081}},
    {"cos",       [](const In& x) { return dlf::cos(x[0]); },  {f64(kSigned)},   {-0.4161468365, 0.8775825619, 1, 0.8775825619, 0.5403023059, -0.9899924966}},
    {"tan",       [](const In& x) { return dlf::tan(x[0]); },  {f64(kSigned)},   {2.185039863, -0.5463024898, 0, 0.5463024898, 1.557407725, -0.1425465431}},
    {"log1p",     [](const In& x) { return log1p(x[0]); },     {f64(kPositive)}, {0.2231435513, 0.4054651081, 0.6931471806, 1.098612289, 1.609437912, 2.302585093}},
    {"expm1",     [](const In& x) { return expm1(x[0]); },     {f64(kSigned)},   {-0.8646647168, -0.3934693403, 0, 0.6487212707, 1.718281828, 19.08553692}},
    {"square",    [](const In& x) { return square(x[0]); },    {f64(kSigned)},   {4, 0.25, 0, 0.25, 1, 9}},
    {"reciprocal",[](const In& x) { return reciprocal(x[0]); },{f64(kPositive)}, {4, 2, 1, 0.5, 0.25, 0.1111111111}},
    {"sign",      [](const In& x) { return sign(x[0]); },      {f64(kSigned)},   {-1, -1, 0, 1, 1, 1}},
    {"floor",     [](const In& x) { return dlf::floor(x[0]); },{f64(kHalves)},   {-2, -1, 0, 0, 1, 2}},
    {"ceil",      [](const In& x) { return dlf::ceil(x[0]); }, {f64(kHalves)},   {-1, 0, 1, 1, 2, 3}},
    {"round",     [](const In& x) { return dlf::round(x[0]); },{f64(kHalves)},   {-2, 0, 0, 0, 2, 2}},
    {"clamp",     [](const In& x) { return clamp(x[0], -1, 1); },{f64(kSigned)}, {-1, -0.5, 0, 0.5, 1, 1}},
  });
  // clang-format on
}

TEST_CASE("binary ops and scalar forms: hand-computed values") {
  const std::vector<double> exponents{0.5, -1, 2, 1.5, 0.5, -0.5};
  // clang-format off
  run({
    {"add",     [](const In& x) { return x[0] + x[1]; },            {f64(kA), f64(kB)}, {3, 2.5, 2, 2, 4.5, 4.25}},
    {"sub",     [](const In& x) { return x[0] - x[1]; },            {f64(kA), f64(kB)}, {-1, 1.5, 4, -4, -3.5, 3.75}},
    {"mul",     [](const In& x) { return x[0] * x[1]; },            {f64(kA), f64(kB)}, {2, 1, -3, -3, 2, 1}},
    {"div",     [](const In& x) { return x[0] / x[1]; },            {f64(kA), f64(kB)}, {0.5, 4, -3, -0.3333333333, 0.125, 16}},
    {"pow",     [](const In& x) { return dlf::pow(x[0], x[1]); },   {f64(kPositive), f64(exponents)}, {0.5, 2, 1, 2.828427125, 2, 0.3333333333}},
    {"maximum", [](const In& x) { return maximum(x[0], x[1]); },    {f64(kA), f64(kB)}, {2, 2, 3, 3, 4, 4}},
    {"minimum", [](const In& x) { return minimum(x[0], x[1]); },    {f64(kA), f64(kB)}, {1, 0.5, -1, -1, 0.5, 0.25}},
    {"add scalar",  [](const In& x) { return x[0] + 1.5; },         {f64(kSigned)},   {-0.5, 1, 1.5, 2, 2.5, 4.5}},
    {"mul scalar",  [](const In& x) { return -2.0 * x[0]; },        {f64(kSigned)},   {4, 1, 0, -1, -2, -6}},
    {"pow scalar",  [](const In& x) { return dlf::pow(x[0], 1.5); },{f64(kPositive)}, {0.125, 0.3535533906, 1, 2.828427125, 8, 27}},
    {"tensor - s",  [](const In& x) { return x[0] - 1.0; },         {f64(kSigned)},   {-3, -1.5, -1, -0.5, 0, 2}},
    {"s - tensor",  [](const In& x) { return 1.0 - x[0]; },         {f64(kSigned)},   {3, 1.5, 1, 0.5, 0, -2}},
    {"tensor / s",  [](const In& x) { return x[0] / 4.0; },         {f64(kSigned)},   {-0.5, -0.125, 0, 0.125, 0.25, 0.75}},
    {"s / tensor",  [](const In& x) { return 2.0 / x[0]; },         {f64(kPositive)}, {8, 4, 2, 1, 0.5, 0.2222222222}},
  });
  // clang-format on
}

TEST_CASE("comparisons, where and masked_fill: hand-computed values") {
  const std::vector<double> a{1, 2, 3, -1, 0.5, 2}, b{1, 3, 2, -1, 0.25, 2};
  const Tensor cond = b8({true, false, true, false, false, true});
  const Tensor row_mask = b8({false, true, false}, {3});
  // clang-format off
  run({
    {"eq", [](const In& x) { return eq(x[0], x[1]); }, {f64(a), f64(b)}, {1, 0, 0, 1, 0, 1}, {2, 3}, kExact},
    {"ne", [](const In& x) { return ne(x[0], x[1]); }, {f64(a), f64(b)}, {0, 1, 1, 0, 1, 0}, {2, 3}, kExact},
    {"lt", [](const In& x) { return lt(x[0], x[1]); }, {f64(a), f64(b)}, {0, 1, 0, 0, 0, 0}, {2, 3}, kExact},
    {"le", [](const In& x) { return le(x[0], x[1]); }, {f64(a), f64(b)}, {1, 1, 0, 1, 0, 1}, {2, 3}, kExact},
    {"gt", [](const In& x) { return gt(x[0], x[1]); }, {f64(a), f64(b)}, {0, 0, 1, 0, 1, 0}, {2, 3}, kExact},
    {"ge", [](const In& x) { return ge(x[0], x[1]); }, {f64(a), f64(b)}, {1, 0, 1, 1, 1, 1}, {2, 3}, kExact},
    {"where", [](const In& x) { return where(x[0], x[1], x[2]); }, {cond, f64(kA), f64(kB)},
                                                                   {1, 0.5, 3, 3, 4, 4}, {2, 3}, kExact},
    {"masked_fill", [](const In& x) { return masked_fill(x[0], x[1], -9); }, {f64(kA), row_mask},
                                                                   {1, -9, 3, -1, -9, 4}, {2, 3}, kExact},
  });
  // clang-format on
}

TEST_CASE("comparison operators and methods, with tensors and scalars: hand-computed values") {
  const std::vector<double> a{1, 2, 3, -1, 0.5, 2}, b{1, 3, 2, -1, 0.25, 2};
  // clang-format off
  run({
    {"a == b",   [](const In& x) { return x[0] == x[1]; },   {f64(a), f64(b)}, {1, 0, 0, 1, 0, 1}, {2, 3}, kExact},
    {"a != b",   [](const In& x) { return x[0] != x[1]; },   {f64(a), f64(b)}, {0, 1, 1, 0, 1, 0}, {2, 3}, kExact},
    {"a < b",    [](const In& x) { return x[0] < x[1]; },    {f64(a), f64(b)}, {0, 1, 0, 0, 0, 0}, {2, 3}, kExact},
    {"a <= b",   [](const In& x) { return x[0] <= x[1]; },   {f64(a), f64(b)}, {1, 1, 0, 1, 0, 1}, {2, 3}, kExact},
    {"a > b",    [](const In& x) { return x[0] > x[1]; },    {f64(a), f64(b)}, {0, 0, 1, 0, 1, 0}, {2, 3}, kExact},
    {"a >= b",   [](const In& x) { return x[0] >= x[1]; },   {f64(a), f64(b)}, {1, 0, 1, 1, 1, 1}, {2, 3}, kExact},
    {"a.eq(b)",  [](const In& x) { return x[0].eq(x[1]); },  {f64(a), f64(b)}, {1, 0, 0, 1, 0, 1}, {2, 3}, kExact},
    {"a.ne(b)",  [](const In& x) { return x[0].ne(x[1]); },  {f64(a), f64(b)}, {0, 1, 1, 0, 1, 0}, {2, 3}, kExact},
    {"a.lt(b)",  [](const In& x) { return x[0].lt(x[1]); },  {f64(a), f64(b)}, {0, 1, 0, 0, 0, 0}, {2, 3}, kExact},
    {"a.le(b)",  [](const In& x) { return x[0].le(x[1]); },  {f64(a), f64(b)}, {1, 1, 0, 1, 0, 1}, {2, 3}, kExact},
    {"a.gt(b)",  [](const In& x) { return x[0].gt(x[1]); },  {f64(a), f64(b)}, {0, 0, 1, 0, 1, 0}, {2, 3}, kExact},
    {"a.ge(b)",  [](const In& x) { return x[0].ge(x[1]); },  {f64(a), f64(b)}, {1, 0, 1, 1, 1, 1}, {2, 3}, kExact},
    {"a == 2",   [](const In& x) { return x[0] == 2.0; },    {f64(a)},         {0, 1, 0, 0, 0, 1}, {2, 3}, kExact},
    {"a != 2",   [](const In& x) { return x[0] != 2.0; },    {f64(a)},         {1, 0, 1, 1, 1, 0}, {2, 3}, kExact},
    {"a < 1",    [](const In& x) { return x[0] < 1.0; },     {f64(a)},         {0, 0, 0, 1, 1, 0}, {2, 3}, kExact},
    {"a <= 1",   [](const In& x) { return x[0] <= 1.0; },    {f64(a)},         {1, 0, 0, 1, 1, 0}, {2, 3}, kExact},
    {"a > 1",    [](const In& x) { return x[0] > 1.0; },     {f64(a)},         {0, 1, 1, 0, 0, 1}, {2, 3}, kExact},
    {"a >= 2",   [](const In& x) { return x[0] >= 2.0; },    {f64(a)},         {0, 1, 1, 0, 0, 1}, {2, 3}, kExact},
    {"2 == a",   [](const In& x) { return 2.0 == x[0]; },    {f64(a)},         {0, 1, 0, 0, 0, 1}, {2, 3}, kExact},
    {"2 != a",   [](const In& x) { return 2.0 != x[0]; },    {f64(a)},         {1, 0, 1, 1, 1, 0}, {2, 3}, kExact},
    {"1 < a",    [](const In& x) { return 1.0 < x[0]; },     {f64(a)},         {0, 1, 1, 0, 0, 1}, {2, 3}, kExact},
    {"1 <= a",   [](const In& x) { return 1.0 <= x[0]; },    {f64(a)},         {1, 1, 1, 0, 0, 1}, {2, 3}, kExact},
    {"1 > a",    [](const In& x) { return 1.0 > x[0]; },     {f64(a)},         {0, 0, 0, 1, 1, 0}, {2, 3}, kExact},
    {"1 >= a",   [](const In& x) { return 1.0 >= x[0]; },    {f64(a)},         {1, 0, 0, 1, 1, 0}, {2, 3}, kExact},
    {"a.eq(2)",  [](const In& x) { return x[0].eq(2); },     {f64(a)},         {0, 1, 0, 0, 0, 1}, {2, 3}, kExact},
    {"a.ne(2)",  [](const In& x) { return x[0].ne(2); },     {f64(a)},         {1, 0, 1, 1, 1, 0}, {2, 3}, kExact},
    {"a.lt(1)",  [](const In& x) { return x[0].lt(1); },     {f64(a)},         {0, 0, 0, 1, 1, 0}, {2, 3}, kExact},
    {"a.le(1)",  [](const In& x) { return x[0].le(1); },     {f64(a)},         {1, 0, 0, 1, 1, 0}, {2, 3}, kExact},
    {"a.gt(1)",  [](const In& x) { return x[0].gt(1); },     {f64(a)},         {0, 1, 1, 0, 0, 1}, {2, 3}, kExact},
    {"a.ge(2)",  [](const In& x) { return x[0].ge(2); },     {f64(a)},         {0, 1, 1, 0, 0, 1}, {2, 3}, kExact},
    {"[2,3] < [3]", [](const In& x) { return x[0] < x[1]; }, {f64(a), f64({2, 2, 2}, {3})},
                                                                               {1, 0, 0, 1, 1, 0}, {2, 3}, kExact},
  });
  // clang-format on
}

TEST_CASE("comparisons with a scalar: it takes the tensor's dtype, as PyTorch's do") {
  // 0.1 is compared in f32: the f32 element 0.1f equals it (PyTorch: tensor([0.1]) == 0.1).
  const Tensor tenth = from_vector<float>({0.1f, 0.2f}, {2});
  CHECK((tenth == 0.1).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK((tenth > 0.1).to_vector<bool>() == std::vector<bool>{false, true});
  const Tensor counts = from_vector<int64_t>({-3, 0, 7}, {3});
  CHECK((counts >= 0).to_vector<bool>() == std::vector<bool>{false, true, true});
  CHECK((counts != 7).dtype() == DType::b8);
  const Tensor mask = from_vector<bool>({true, false}, {2});
  CHECK((mask == 0).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(mask.ne(1).to_vector<bool>() == std::vector<bool>{false, true});
  // Not differentiable: the result of a comparison of a tensor that requires grad does not.
  const Tensor w = from_vector<float>({1, -1}, {2});
  w.requires_grad_();
  CHECK(!(w > 0).requires_grad());
  CHECK((ones({4, 1}, {.device = kMeta}) < 0.5).dtype() == DType::b8);
  check_error([&] { counts < 2.5; }, {"lt", "2.5", "not an integer", "i64"});
  check_error([&] { mask == 2; }, {"eq", "bool", "0 or 1", "2"});
  check_error([&] { tenth == from_vector<double>({0.1}, {1}); }, {"eq", "f32", "f64"});
}

TEST_CASE("broadcasting: [2,3]+[3], [2,1]*[1,3], scalar-shaped operands, src0 broadcast") {
  const Tensor m = f64({1, 2, 3, 4, 5, 6});
  const Tensor row = f64({10, 20, 30}, {3});
  const Tensor col = f64({1, 2}, {2, 1});
  const Tensor scalar = f64({2}, {});
  // clang-format off
  run({
    {"[2,3] + [3]",   [](const In& x) { return x[0] + x[1]; }, {m, row},   {11, 22, 33, 14, 25, 36}},
    {"[3] + [2,3]",   [](const In& x) { return x[0] + x[1]; }, {row, m},   {11, 22, 33, 14, 25, 36}},
    {"[3] - [2,3]",   [](const In& x) { return x[0] - x[1]; }, {row, m},   {9, 18, 27, 6, 15, 24}},
    {"[2,1] * [1,3]", [](const In& x) { return x[0] * x[1]; }, {col, f64({1, 10, 100}, {1, 3})},
                                                                           {1, 10, 100, 2, 20, 200}},
    {"[] + [2,3]",    [](const In& x) { return x[0] + x[1]; }, {scalar, m}, {3, 4, 5, 6, 7, 8}},
    {"[2,3] / []",    [](const In& x) { return x[0] / x[1]; }, {m, scalar}, {0.5, 1, 1.5, 2, 2.5, 3}},
    {"[] * []",       [](const In& x) { return x[0] * x[1]; }, {scalar, scalar}, {4}, {}},
    {"[3,1,2] * 2",   [](const In& x) { return x[0] * 2.0; }, {f64({1, 2, 3, 4, 5, 6}, {3, 1, 2})},
                                                                           {2, 4, 6, 8, 10, 12}, {3, 1, 2}},
    {"lt [3] vs [2,3]", [](const In& x) { return lt(x[0], x[1]); }, {f64({2, 3, 4}, {3}), m},
                                                                           {0, 0, 0, 1, 1, 1}, {2, 3}, kExact},
    {"where [2,1], [3], []", [](const In& x) { return where(x[0], x[1], x[2]); },
        {b8({true, false}, {2, 1}), f64({1, 2, 3}, {3}), f64({7}, {})}, {1, 2, 3, 7, 7, 7}, {2, 3}, kExact},
  });
  // clang-format on
}

namespace {

// Odd sizes: vector tails on every path; positive inputs only where the op needs them.
void check_every_op(const Shape& shape) {
  const In x = test::random_inputs({shape, shape}, 7);
  const In positive = {dlf::abs(x[0]) + 0.5, dlf::abs(x[1]) + 0.5};
  struct Unary {
    const char* name;
    test::OpFn fn;
    bool needs_positive = false;
  };
  const std::vector<Unary> unary = {
      {"neg", [](const In& v) { return neg(v[0]); }},
      {"exp", [](const In& v) { return dlf::exp(v[0]); }},
      {"sqrt", [](const In& v) { return dlf::sqrt(v[0]); }, true},
      {"rsqrt", [](const In& v) { return rsqrt(v[0]); }, true},
      {"abs", [](const In& v) { return dlf::abs(v[0]); }},
      {"tanh", [](const In& v) { return dlf::tanh(v[0]); }},
      {"sigmoid", [](const In& v) { return sigmoid(v[0]); }},
      {"relu", [](const In& v) { return relu(v[0]); }},
      {"gelu erf", [](const In& v) { return gelu(v[0]); }},
      {"gelu tanh", [](const In& v) { return gelu(v[0], GeluApproximation::tanh); }},
      {"add scalar", [](const In& v) { return v[0] + 0.3; }},
      {"mul scalar", [](const In& v) { return v[0] * 0.3; }},
      {"pow scalar", [](const In& v) { return dlf::pow(v[0], 2.5); }, true},
  };
  for (const Unary& u : unary) {
    SUBCASE(u.name) { check_op(u.fn, {u.needs_positive ? positive[0] : x[0]}, {.bf16_tol = 3e-2}); }
  }
  SUBCASE("log") {
    check_op([](const In& v) { return dlf::log(v[0]); }, {positive[0]}, kLog);
    const Tensor f32 = positive[0].to(DType::f32);
    check_close(dlf::log(test::strided_copy(f32)), dlf::log(f32), 1e-5, 1e-5);
  }
  const std::vector<std::pair<const char*, test::OpFn>> binary = {
      {"add", [](const In& v) { return v[0] + v[1]; }},
      {"sub", [](const In& v) { return v[0] - v[1]; }},
      {"mul", [](const In& v) { return v[0] * v[1]; }},
      {"div", [](const In& v) { return v[0] / v[1]; }},
      {"pow", [](const In& v) { return dlf::pow(v[0], v[1]); }},
      {"maximum", [](const In& v) { return maximum(v[0], v[1]); }},
      {"minimum", [](const In& v) { return minimum(v[0], v[1]); }},
  };
  for (const auto& [name, fn] : binary) {
    SUBCASE(name) { check_op(fn, positive, {.bf16_tol = 3e-2}); }
  }
  SUBCASE("signed operands of a chain") {
    check_op([](const In& v) { return (v[0] - v[1]) * v[1] + maximum(v[0], v[1]); }, x,
             {.bf16_tol = 5e-2});
  }
}

}  // namespace

TEST_CASE("every op agrees across dtypes and layouts on random inputs, dlf's loops") {
  check_every_op({3, 67});
}

TEST_CASE("every op agrees across dtypes and layouts on random inputs, oneDNN's kernels") {
  // From kParallelGrain elements on, dense f32 and bf16 operands run oneDNN's kernels and the
  // strided copies dlf's loops.
  check_every_op({3, 10949});
}

TEST_CASE("a broadcast add big enough to run in parallel matches a naive loop") {
  const int64_t n = 200;
  const Tensor a = arange(n * n, {.dtype = DType::f64}).view({n, n});
  const Tensor b = arange(n, {.dtype = DType::f64}) * 0.5;
  std::vector<double> expected(n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) expected[i * n + j] = double(i * n + j) + 0.5 * double(j);
  }
  check_close(a + b, expected, {n, n}, 0, 0);
  check_close(a.to(DType::f32) + b.to(DType::f32), expected, {n, n}, 0, 1e-7);
}

TEST_CASE("integer dtypes") {
  for (DType dtype : {DType::i32, DType::i64}) {
    INFO(dtype_name(dtype));
    const Tensor a = from_vector<int64_t>({3, -4, 5, 0, 7, -1}, {2, 3}).to(dtype);
    const Tensor b = from_vector<int64_t>({2, 2, -5}, {3}).to(dtype);
    auto values = [](const Tensor& t) { return t.to_vector<int64_t>(); };
    using V = std::vector<int64_t>;
    CHECK(values(neg(a)) == V{-3, 4, -5, 0, -7, 1});
    CHECK(values(dlf::abs(a)) == V{3, 4, 5, 0, 7, 1});
    CHECK(values(a + b) == V{5, -2, 0, 2, 9, -6});
    CHECK(values(a - b) == V{1, -6, 10, -2, 5, 4});
    CHECK(values(a * b) == V{6, -8, -25, 0, 14, 5});
    CHECK(values(maximum(a, b)) == V{3, 2, 5, 2, 7, -1});
    CHECK(values(minimum(a, b)) == V{2, -4, -5, 0, 2, -5});
    CHECK(values(a * 3.0 + 1.0) == V{10, -11, 16, 1, 22, -2});
    CHECK(values(lt(a, b)) == V{0, 1, 0, 1, 0, 0});
    CHECK(values(eq(a, b)) == V{0, 0, 0, 0, 0, 0});
    CHECK(values(ge(b, a)) == V{0, 1, 0, 1, 0, 0});
    CHECK(values(where(gt(a, b), a, b)) == V{3, 2, 5, 2, 7, -1});
    CHECK(values(masked_fill(a, lt(a, zeros_like(a)), 9)) == V{3, 9, 5, 0, 7, 9});
    CHECK((a + b).dtype() == dtype);
    CHECK(lt(a, b).dtype() == DType::b8);
  }
}

TEST_CASE("bool dtype: eq, ne, where and masked_fill") {
  const Tensor p = b8({true, true, false, false}, {4});
  const Tensor q = b8({true, false, true, false}, {4});
  using V = std::vector<bool>;
  CHECK(eq(p, q).to_vector<bool>() == V{true, false, false, true});
  CHECK(ne(p, q).to_vector<bool>() == V{false, true, true, false});
  CHECK(where(p, q, ne(p, q)).to_vector<bool>() == V{true, false, true, false});
  CHECK(masked_fill(p, q, 0).to_vector<bool>() == V{false, true, false, false});
}

TEST_CASE("costs: bytes at the operands' own sizes, FLOPs per element") {
  struct Recorder : DispatchObserver {
    std::vector<Cost> costs;
    void on_op(const OpDef& op, Inputs in, const Attrs& a, std::span<const Tensor> out) override {
      costs.push_back(op_cost(op, in, a, out));
    }
  } rec;
  const Tensor m = zeros({2, 3}), row = zeros({3});
  add_observer(&rec);
  m + row;
  dlf::exp(m);
  remove_observer(&rec);
  REQUIRE(rec.costs.size() == 2);
  CHECK(rec.costs[0].bytes_read == 24 + 12);
  CHECK(rec.costs[0].bytes_written == 24);
  CHECK(rec.costs[0].flops == 6);
  CHECK(rec.costs[1].flops == 60);  // a transcendental function counts 10
}

TEST_CASE("costs of random draws and GELU's backward count the work per element") {
  const Tensor x = zeros({2, 3});
  const std::vector<Tensor> in{x, x}, out{x};
  const OpDef& backward = find_op("gelu_backward");
  // tanh's derivative reuses its tanh (10 + 10), erf's computes an erfc and an exp (2 x 10 + 8)
  CHECK(op_cost(backward, in, {{"approximation", std::string("tanh")}}, out).flops == 6 * 20);
  CHECK(op_cost(backward, in, {{"approximation", std::string("erf")}}, out).flops == 6 * 28);
  const OpDef& draw = find_op("rand");
  const Cost uniform = op_cost(draw, {}, {{"distribution", std::string("uniform")}}, out);
  CHECK(uniform.flops == 6 * 60);  // Philox-4x32-10: ten rounds of six operations
  CHECK(uniform.bytes_written == 24);
  CHECK(op_cost(draw, {}, {{"distribution", std::string("normal")}}, out).flops ==
        6 * (60 + 30));  // and a log, a square root and a cosine
  // Dropout's draw is not counted: it stays cheap to recompute (costly_to_recompute)
  const Tensor mask = zeros({2, 3}, {.dtype = DType::b8});
  const std::vector<Tensor> dropped{x, mask};
  const std::vector<Tensor> kept{x};
  CHECK(op_cost(find_op("dropout"), kept, {}, dropped).flops == 6);
  CHECK(!costly_to_recompute(find_op("dropout"), kept, {}, dropped));
}

TEST_CASE("meta tensors get shapes and dtypes without numerics") {
  const Tensor a = ones({4, 1}, {.device = kMeta}), b = ones({5}, {.device = kMeta});
  CHECK((a * b).shape() == Shape{4, 5});
  CHECK(lt(a, b).dtype() == DType::b8);
  CHECK(dlf::exp(a).device() == kMeta);
}

TEST_CASE("bad input names the op, the dtypes and the shapes") {
  const Tensor f = zeros({2, 3}), d = zeros({3}, {.dtype = DType::f64});
  const Tensor i = zeros({3}, {.dtype = DType::i64}), flag = b8({true}, {1});
  check_error([&] { f + d; }, {"add", "f32", "f64", "[2, 3]", "[3]"});
  check_error([&] { where(flag, f, d); }, {"where", "f32", "f64"});
  check_error([&] { f* zeros({4}); }, {"mul", "[2, 3]", "[4]", "broadcast"});
  check_error([&] { maximum(f, zeros({2, 2})); }, {"maximum", "[2, 3]", "[2, 2]"});
  check_error([&] { dlf::exp(i); }, {"exp", "i64", "[3]"});
  check_error([&] { i / i; }, {"div", "i64"});
  check_error([&] { lt(flag, flag); }, {"lt", "bool"});
  check_error([&] { i + 0.5; }, {"add_scalar", "0.5", "i64"});
  check_error([&] { where(f, f, f); }, {"where", "bool", "f32"});
  check_error(
      [&] {
        masked_fill(zeros({3}), b8({true, false, true, false, true, true}), 1);
      },
      {"masked_fill", "[2, 3]", "[3]"});
}

TEST_CASE("erf matches reference values") {
  Tensor x = from_vector<double>({0, 1, -0.5, 3}, {4});
  dlf::test::check_op([](const std::vector<Tensor>& in) { return erf(in[0]); }, {x});
  check_close(erf(x), {0, 0.8427007929497149, -0.5204998778130465, 0.9999779095030014}, {4}, 1e-12);
}

TEST_CASE("gelu_backward: grad times gelu'(x), f32/bf16 (oneDNN at this size) against f64") {
  const OpDef& op = find_op("gelu_backward");
  // gelu_erf'(x) = Phi(x) + x phi(x): 0.5 at 0, 1.0833154706 at 1, -0.0833154706 at -1.
  const Tensor x64 = from_vector<double>({0, 1, -1}), g64 = from_vector<double>({2, 1, 1});
  check_close(dispatch1(op, {g64, x64}, {{"approximation", std::string("erf")}}),
              {1, 1.0833154706, -0.0833154706}, {3}, 1e-9);
  const Tensor x = randn({7, 4699}), g = randn({7, 4699});
  for (const char* approx : {"erf", "tanh"}) {
    const Attrs a{{"approximation", std::string(approx)}};
    const Tensor reference = dispatch1(op, {g.to(DType::f64), x.to(DType::f64)}, a);
    check_close(dispatch1(op, {g, x}, a), reference, 1e-5, 1e-5);
    check_close(dispatch1(op, {g.to(DType::bf16), x.to(DType::bf16)}, a), reference, 0.05, 0.02);
  }
  check_error(
      [&] {
        dispatch1(op, {g, randn({7, 52})}, {{"approximation", std::string("erf")}});
      },
      {"gelu_backward", "[7, 4699]", "[7, 52]"});
}

TEST_CASE("clamp refuses min above max; sign, floor, ceil, round keep NaN") {
  check_error([] { clamp(zeros({2}), 1, -1); }, {"clamp", "min 1", "max -1"});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto* f :
       {+[](const Tensor& x) { return sign(x); }, +[](const Tensor& x) { return floor(x); },
        +[](const Tensor& x) { return clamp(x, 0, 1); }}) {
    CHECK(std::isnan(f(from_vector<double>({nan})).item<double>()));
  }
}

TEST_CASE("f32 sigmoid and silu off oneDNN (their own exp) stay within 2 ulp of f64") {
  // The values span the whole range exp saturates over.
  const Tensor grid = (arange(20200, {.dtype = DType::f64}) - 10100) * 0.01;  // -101 to 101
  const Tensor x = grid.to(DType::f32).reshape({101, 200}).transpose(0, 1);
  const std::vector<double> xs = x.to_vector<double>();
  const std::vector<double> s = sigmoid(x).to_vector<double>(), y = silu(x).to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = 1 / (1 + std::exp(-xs[i]));
    INFO("x = ", xs[i]);
    // 2 ulp (2^-23 relative each); below e^-87 exp saturates at the smallest normal float.
    constexpr double kUlp = 0x1p-23;
    CHECK(std::fabs(s[i] - want) <= 2 * kUlp * want + 1e-36);
    CHECK(std::fabs(y[i] - xs[i] * want) <= 2 * kUlp * std::fabs(xs[i] * want) + 1e-35);
  }
}
