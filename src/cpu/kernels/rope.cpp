// rope: rotates pairs of each head by the angles of core::rope_angles (see op.h).
//
// kNormal pairs are (x[2j], x[2j+1]), kNeox pairs (x[j], x[j + n_dims/2]); elements past n_dims
// are copied. Each thread caches the cos/sin for the position it is working on, since all heads
// of a token share them.
#include <cmath>
#include <cstring>

#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_f32(uint8_t* p, float v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace

size_t rope_work_size(const core::Tensor& dst, int nth) {
  const auto& rp = std::get<core::RopeParams>(dst.params);
  return scratch_bytes(0, static_cast<size_t>(rp.n_dims) * sizeof(float), nth);
}

void rope(const core::Tensor& dst, const KernelArgs& args) {
  const core::Tensor& a = *dst.src[0];
  const core::Tensor& pos = *dst.src[1];
  const auto& rp = std::get<core::RopeParams>(dst.params);
  const auto* factors =
      dst.src[2] != nullptr ? static_cast<const float*>(dst.src[2]->data) : nullptr;
  const int64_t half = rp.n_dims / 2;
  // Neox pairs element j with j + n_dims/2; normal pairs 2j with 2j + 1.
  const bool neox = rp.mode == core::RopeMode::kNeox;
  const int64_t first_step = neox ? 1 : 2;
  const int64_t partner = neox ? half : 1;

  auto* cos_c = reinterpret_cast<float*>(
      thread_scratch(args, 0, static_cast<size_t>(rp.n_dims) * sizeof(float)));
  float* sin_c = cos_c + half;
  bool cached = false;
  int32_t cached_pos = 0;

  const Range rows = split_range(dst.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(dst, r);
    int32_t p;
    std::memcpy(&p, static_cast<const uint8_t*>(pos.data) + ix.i2 * pos.nb[0], sizeof p);
    if (!cached || p != cached_pos) {
      core::rope_angles(rp, p, cos_c, sin_c, factors);
      cached = true;
      cached_pos = p;
    }
    const uint8_t* x = a.row_ptr(ix.i1, ix.i2, ix.i3);
    uint8_t* y = dst.row_ptr(ix.i1, ix.i2, ix.i3);
    const size_t xs = a.nb[0];
    const size_t ys = dst.nb[0];
    for (int64_t j = 0; j < half; ++j) {
      const int64_t i0 = j * first_step;
      const int64_t i1 = i0 + partner;
      const float x0 = load_f32(x + i0 * xs);
      const float x1 = load_f32(x + i1 * xs);
      // x0's products fused, x1's rounded first: how llama.cpp's build (GCC contracting and
      // vectorizing its loop) rounds, so rotated values match it bit for bit.
      store_f32(y + i0 * ys, std::fma(x0, cos_c[j], -(x1 * sin_c[j])));
      store_f32(y + i1 * ys, std::fma(x0, sin_c[j], x1 * cos_c[j]));
    }
    for (int64_t i = rp.n_dims; i < dst.ne[0]; ++i) store_f32(y + i * ys, load_f32(x + i * xs));
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
