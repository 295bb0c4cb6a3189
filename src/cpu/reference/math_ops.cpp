// Reference f32 arithmetic: each result computed in double and rounded to f32 once.
#include <cmath>

#include "core/float16.h"
#include "cpu/reference/ops.h"
#include "cpu/reference/tensor_io.h"

namespace strata::cpu::reference {
namespace {

using core::Tensor;

// Calls f(i0, i1, i2, i3) for every element of t.
template <class F>
void for_each(const Tensor& t, F f) {
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
        for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) f(i0, i1, i2, i3);
      }
    }
  }
}

double silu_of(double x) {
  return x / (1.0 + std::exp(-x));
}

// dst = op(src0, src1) with src1's index wrapping at its own size in every dim.
template <class Op>
void binary(const Tensor& dst, Op op) {
  const Tensor& a = *dst.src[0];
  const Tensor& b = *dst.src[1];
  for_each(dst, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const double x = get(a, i0, i1, i2, i3);
    const double y = get(b, i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
    set(dst, i0, i1, i2, i3, static_cast<float>(op(x, y)));
  });
}

template <class Op>
void unary(const Tensor& dst, Op op) {
  const Tensor& a = *dst.src[0];
  for_each(dst, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    set(dst, i0, i1, i2, i3, static_cast<float>(op(static_cast<double>(get(a, i0, i1, i2, i3)))));
  });
}

// Calls f(i1, i2, i3) for every row of t.
template <class F>
void for_each_row(const Tensor& t, F f) {
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) f(i1, i2, i3);
    }
  }
}

}  // namespace

void add(const Tensor& dst) {
  binary(dst, [](double x, double y) { return x + y; });
}

void mul(const Tensor& dst) {
  binary(dst, [](double x, double y) { return x * y; });
}

// Both operands are floats, so the quotient in double rounds to the f32 quotient exactly.
void div(const Tensor& dst) {
  binary(dst, [](double x, double y) { return x / y; });
}

void sum_rows(const Tensor& dst) {
  const Tensor& a = *dst.src[0];
  for_each_row(dst, [&](int64_t i1, int64_t i2, int64_t i3) {
    double sum = 0.0;
    for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) sum += get(a, i0, i1, i2, i3);
    set(dst, 0, i1, i2, i3, static_cast<float>(sum));
  });
}

void swiglu(const Tensor& dst) {
  binary(dst, [](double g, double u) { return silu_of(g) * u; });
}

void scale(const Tensor& dst) {
  const double s = std::get<core::ScaleParams>(dst.params).scale;
  unary(dst, [s](double x) { return x * s; });
}

void silu(const Tensor& dst) {
  unary(dst, silu_of);
}

// Straight from the definition in core/ops.h, no table: the kernel's table must agree.
void gelu(const Tensor& dst) {
  unary(dst, [](double x) -> double {
    if (x <= -10.0) return 0.0;
    if (x >= 10.0) return x;
    const float xh = core::half_to_float(core::float_to_half(static_cast<float>(x)));
    return core::half_to_float(core::float_to_half(core::gelu_tanh(xh)));
  });
}

// The op is defined as tanhf; double's tanh would differ from it in the last bit.
void tanh(const Tensor& dst) {
  unary(dst, [](double x) { return static_cast<double>(std::tanh(static_cast<float>(x))); });
}

void rms_norm(const Tensor& dst) {
  const Tensor& a = *dst.src[0];
  const double eps = std::get<core::RmsNormParams>(dst.params).eps;
  for_each_row(dst, [&](int64_t i1, int64_t i2, int64_t i3) {
    double sum = 0.0;
    for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) {
      const double x = get(a, i0, i1, i2, i3);
      sum += x * x;
    }
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(a.ne[0]) + eps);
    for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) {
      set(dst, i0, i1, i2, i3, static_cast<float>(get(a, i0, i1, i2, i3) * inv));
    }
  });
}

// Pair j rotates by the angle core::rope_angles defines; kNormal pairs
// (2j, 2j + 1), kNeox pairs (j, j + n_dims / 2); elements from n_dims on are copied.
void rope(const Tensor& dst) {
  const Tensor& a = *dst.src[0];
  const Tensor& pos = *dst.src[1];
  const auto& p = std::get<core::RopeParams>(dst.params);
  const int64_t half = p.n_dims / 2;
  std::vector<float> factors;
  if (dst.src[2] != nullptr) {
    for (int64_t j = 0; j < half; ++j) factors.push_back(get(*dst.src[2], j, 0, 0, 0));
  }
  for_each_row(dst, [&](int64_t i1, int64_t i2, int64_t i3) {
    std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    core::rope_angles(p, get_i32(pos, i2), cos_t.data(), sin_t.data(),
                      factors.empty() ? nullptr : factors.data());
    for (int64_t j = 0; j < half; ++j) {
      const double c = cos_t[static_cast<size_t>(j)], sn = sin_t[static_cast<size_t>(j)];
      const int64_t first = p.mode == core::RopeMode::kNeox ? j : 2 * j;
      const int64_t second = p.mode == core::RopeMode::kNeox ? j + half : 2 * j + 1;
      const double x0 = get(a, first, i1, i2, i3);
      const double x1 = get(a, second, i1, i2, i3);
      set(dst, first, i1, i2, i3, static_cast<float>(x0 * c - x1 * sn));
      set(dst, second, i1, i2, i3, static_cast<float>(x0 * sn + x1 * c));
    }
    for (int64_t i0 = p.n_dims; i0 < a.ne[0]; ++i0)
      set(dst, i0, i1, i2, i3, get(a, i0, i1, i2, i3));
  });
}

// softmax(x * scale + mask[i1]) per row; a row that is -inf everywhere gives zeros.
void soft_max(const Tensor& dst) {
  const Tensor& a = *dst.src[0];
  const Tensor* mask = dst.src[1];
  const double s = std::get<core::SoftMaxParams>(dst.params).scale;
  const int64_t n = a.ne[0];
  for_each_row(dst, [&](int64_t i1, int64_t i2, int64_t i3) {
    std::vector<double> v(static_cast<size_t>(n));
    double max = -INFINITY;
    for (int64_t i0 = 0; i0 < n; ++i0) {
      double x = get(a, i0, i1, i2, i3) * s;
      if (mask != nullptr) x += get(*mask, i0, i1, 0, 0);
      v[static_cast<size_t>(i0)] = x;
      max = std::max(max, x);
    }
    double sum = 0.0;
    for (double& x : v) {
      x = max == -INFINITY ? 0.0 : std::exp(x - max);
      sum += x;
    }
    for (int64_t i0 = 0; i0 < n; ++i0) {
      const double y = sum > 0.0 ? v[static_cast<size_t>(i0)] / sum : 0.0;
      set(dst, i0, i1, i2, i3, static_cast<float>(y));
    }
  });
}

}  // namespace strata::cpu::reference
