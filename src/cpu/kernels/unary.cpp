// gelu and tanh: elementwise f32 through scalar library calls (tanhf), rows split by thread.
//
// gelu follows llama.cpp's CPU backend (GGML_GELU_FP16): inputs in (-10, 10) are rounded to f16
// and looked up in a table of f16(gelu_tanh(x)) for every f16 x, built once on first use.
// Reading x before writing y element by element keeps in-place use (dst == src0) safe.
#include <array>
#include <cmath>
#include <cstring>

#include "core/float16.h"
#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Tensor;

using GeluTable = std::array<uint16_t, 1 << 16>;

// Built by the first caller; C++ guarantees every other thread waits for it.
const GeluTable& gelu_table() {
  static const GeluTable table = [] {
    GeluTable t{};
    for (uint32_t h = 0; h < t.size(); ++h) {
      const float x = core::half_to_float(core::Half{static_cast<uint16_t>(h)});
      t[h] = core::float_to_half(core::gelu_tanh(x)).bits;
    }
    return t;
  }();
  return table;
}

template <class F>
void unary_scalar(const Tensor& dst, const KernelArgs& args, F f) {
  const Tensor& a = *dst.src[0];
  const Range rows = split_range(dst.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(dst, r);
    const uint8_t* x = a.row_ptr(ix.i1, ix.i2, ix.i3);
    uint8_t* y = dst.row_ptr(ix.i1, ix.i2, ix.i3);
    for (int64_t i = 0; i < dst.ne[0]; ++i) {
      float v;
      std::memcpy(&v, x + i * a.nb[0], sizeof v);
      v = f(v);
      std::memcpy(y + i * dst.nb[0], &v, sizeof v);
    }
  }
}

}  // namespace

void gelu(const Tensor& dst, const KernelArgs& args) {
  const GeluTable& table = gelu_table();
  unary_scalar(dst, args, [&table](float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return core::half_to_float(core::Half{table[core::float_to_half(x).bits]});
  });
}

void tanh(const Tensor& dst, const KernelArgs& args) {
  unary_scalar(dst, args, [](float x) { return std::tanh(x); });
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
