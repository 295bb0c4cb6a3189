// Elementwise f32 kernels: add, mul, div (with broadcast of src1), scale, silu, swiglu.
//
// Rows are split across threads. Dense rows go through the vector loop; strided rows and row
// tails go through the same vector code eight elements at a time via a small buffer, so a
// value gives the same bits wherever it sits in a tensor.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Tensor;

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_f32(uint8_t* p, float v) {
  std::memcpy(p, &v, sizeof v);
}

#if defined(STRATA_CPU_AVX2)
using Vec = __m256;
inline Vec vload(const float* p) {
  return _mm256_loadu_ps(p);
}
inline void vstore(float* p, Vec v) {
  _mm256_storeu_ps(p, v);
}
#else
// Without vector units a "vector" is one element; the same op code serves both builds.
using Vec = float;
inline Vec vload(const float* p) {
  return *p;
}
inline void vstore(float* p, Vec v) {
  *p = v;
}
#endif
constexpr int kLanes = sizeof(Vec) / sizeof(float);

struct AddOp {
  Vec operator()(Vec a, Vec b) const {
#if defined(STRATA_CPU_AVX2)
    return _mm256_add_ps(a, b);
#else
    return a + b;
#endif
  }
};

struct MulOp {
  Vec operator()(Vec a, Vec b) const {
#if defined(STRATA_CPU_AVX2)
    return _mm256_mul_ps(a, b);
#else
    return a * b;
#endif
  }
};

// Division is correctly rounded in both forms, so vector and scalar lanes agree.
struct DivOp {
  Vec operator()(Vec a, Vec b) const {
#if defined(STRATA_CPU_AVX2)
    return _mm256_div_ps(a, b);
#else
    return a / b;
#endif
  }
};

struct ScaleOp {
  float s;
  Vec operator()(Vec a) const {
#if defined(STRATA_CPU_AVX2)
    return _mm256_mul_ps(a, _mm256_set1_ps(s));
#else
    return a * s;
#endif
  }
};

// silu(x) = x / (1 + e^-x).
inline Vec silu_vec(Vec x) {
#if defined(STRATA_CPU_AVX2)
  const Vec e = simd::exp(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
#else
  return x / (1.0f + std::exp(-x));
#endif
}

// llama.cpp's AVX-512 build runs SiLU 16 elements at a time from the start of each row and
// the last n % 16 through the C library's expf. Doing the same makes every value round as
// there (the vector exp and expf can differ in the last bit).
inline float silu_scalar(float x) {
  return x / (1.0f + std::exp(-x));
}

struct SiluOp {
  static constexpr bool kScalarTail = true;
  Vec operator()(Vec a) const { return silu_vec(a); }
  float scalar(float a) const { return silu_scalar(a); }
};

struct SwigluOp {
  static constexpr bool kScalarTail = true;
  Vec operator()(Vec g, Vec u) const { return MulOp{}(silu_vec(g), u); }
  float scalar(float g, float u) const { return silu_scalar(g) * u; }
};

// Elements [vector_end(n), n) of a row take the op's scalar form (see SiluOp).
template <class F>
int64_t vector_end(int64_t n) {
  if constexpr (requires { F::kScalarTail; }) {
    return n - n % 16;
  } else {
    return n;
  }
}

// A strided run of f32 elements: element i at p + i * stride; `period` > 0 wraps the index
// (broadcast of a shorter src1 row).
struct Strided {
  const uint8_t* p;
  size_t stride;
  int64_t period;
  float at(int64_t i) const { return load_f32(p + static_cast<size_t>(i % period) * stride); }
  bool dense(int64_t n) const { return stride == sizeof(float) && period >= n; }
};

template <class F>
void unary_row(Strided x, uint8_t* d, size_t ds, int64_t n_all, F f) {
  const int64_t n = vector_end<F>(n_all);
  if constexpr (requires { F::kScalarTail; }) {
    for (int64_t i = n; i < n_all; ++i)
      store_f32(d + static_cast<size_t>(i) * ds, f.scalar(x.at(i)));
  }
  int64_t i = 0;
  if (x.dense(n) && ds == sizeof(float)) {
    const auto* xs = reinterpret_cast<const float*>(x.p);
    auto* out = reinterpret_cast<float*>(d);
    for (; i + kLanes <= n; i += kLanes) vstore(out + i, f(vload(xs + i)));
  }
  for (; i < n; i += kLanes) {
    const int64_t cnt = std::min<int64_t>(kLanes, n - i);
    float buf[kLanes] = {};
    for (int64_t j = 0; j < cnt; ++j) buf[j] = x.at(i + j);
    vstore(buf, f(vload(buf)));
    for (int64_t j = 0; j < cnt; ++j) store_f32(d + static_cast<size_t>(i + j) * ds, buf[j]);
  }
}

template <class F>
void binary_row(Strided a, Strided b, uint8_t* d, size_t ds, int64_t n_all, F f) {
  const int64_t n = vector_end<F>(n_all);
  if constexpr (requires { F::kScalarTail; }) {
    for (int64_t i = n; i < n_all; ++i) {
      store_f32(d + static_cast<size_t>(i) * ds, f.scalar(a.at(i), b.at(i)));
    }
  }
  int64_t i = 0;
  if (a.dense(n) && b.dense(n) && ds == sizeof(float)) {
    const auto* as = reinterpret_cast<const float*>(a.p);
    const auto* bs = reinterpret_cast<const float*>(b.p);
    auto* out = reinterpret_cast<float*>(d);
    for (; i + kLanes <= n; i += kLanes) vstore(out + i, f(vload(as + i), vload(bs + i)));
  }
  for (; i < n; i += kLanes) {
    const int64_t cnt = std::min<int64_t>(kLanes, n - i);
    float ba[kLanes] = {};
    float bb[kLanes] = {};
    for (int64_t j = 0; j < cnt; ++j) {
      ba[j] = a.at(i + j);
      bb[j] = b.at(i + j);
    }
    vstore(ba, f(vload(ba), vload(bb)));
    for (int64_t j = 0; j < cnt; ++j) store_f32(d + static_cast<size_t>(i + j) * ds, ba[j]);
  }
}

template <class F>
void unary(const Tensor& dst, const KernelArgs& args, F f) {
  const Tensor& a = *dst.src[0];
  const Range rows = split_range(dst.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(dst, r);
    const Strided x{a.row_ptr(ix.i1, ix.i2, ix.i3), a.nb[0], a.ne[0]};
    unary_row(x, dst.row_ptr(ix.i1, ix.i2, ix.i3), dst.nb[0], dst.ne[0], f);
  }
}

// src1 is broadcast: its index along each dim wraps at its own size.
template <class F>
void binary(const Tensor& dst, const KernelArgs& args, F f) {
  const Tensor& a = *dst.src[0];
  const Tensor& b = *dst.src[1];
  const Range rows = split_range(dst.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(dst, r);
    const Strided x{a.row_ptr(ix.i1, ix.i2, ix.i3), a.nb[0], a.ne[0]};
    const Strided y{b.row_ptr(ix.i1 % b.ne[1], ix.i2 % b.ne[2], ix.i3 % b.ne[3]), b.nb[0], b.ne[0]};
    binary_row(x, y, dst.row_ptr(ix.i1, ix.i2, ix.i3), dst.nb[0], dst.ne[0], f);
  }
}

}  // namespace

void add(const Tensor& dst, const KernelArgs& args) {
  binary(dst, args, AddOp{});
}
void mul(const Tensor& dst, const KernelArgs& args) {
  binary(dst, args, MulOp{});
}
void div(const Tensor& dst, const KernelArgs& args) {
  binary(dst, args, DivOp{});
}
void swiglu(const Tensor& dst, const KernelArgs& args) {
  binary(dst, args, SwigluOp{});
}
void silu(const Tensor& dst, const KernelArgs& args) {
  unary(dst, args, SiluOp{});
}

void scale(const Tensor& dst, const KernelArgs& args) {
  unary(dst, args, ScaleOp{std::get<core::ScaleParams>(dst.params).scale});
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
