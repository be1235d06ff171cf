// The arithmetic and comparison operators on tensors, as the element-wise ops they stand for.
#include <dlf/core/ops/elementwise.h>

namespace dlf {

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator+(double a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, double b) { return mul(a, 1 / b); }
Tensor operator/(double a, const Tensor& b) { return mul(pow(b, -1), a); }

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, double b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, double b) { return ne(a, b); }
Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }
Tensor operator==(double a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(double a, const Tensor& b) { return ne(b, a); }
Tensor operator<(double a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(double a, const Tensor& b) { return ge(b, a); }
Tensor operator>(double a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(double a, const Tensor& b) { return le(b, a); }

}  // namespace dlf
