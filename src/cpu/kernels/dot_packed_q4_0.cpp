// Packed AVX-512 VNNI kernel for q4_0 weights with q8_0 activations: one weight row per int32
// lane (dot_lanes_q0.h has the tiles, the panel and the arithmetic, shared with q8_0). This
// file reads sixteen q4_0 rows: the quants are taken as the nibbles themselves (q + 8), and
// each packed activation block starts its lanes at -8 * (sum of its activations).
#include "core/blocks.h"
#include "cpu/kernels/dot_lanes_q0.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_0;
using core::kQK8_0;

#if defined(STRATA_CPU_AVX512)

using lanes::kRows;
using lanes::WeightBlock;

/// Sixteen q4_0 rows read in place. Rows past nw repeat the last one: their lanes compute
/// something finite that is never stored.
class Q4Rows {
 public:
  Q4Rows(int64_t k, const uint8_t* w, size_t ldw, int nw) : w_(w), blocks_(k / kQK8_0) {
    next_ = simd::prefetch_origin(w, kRows * ldw);
    lanes::row_offsets(ldw, nw, offset_);
  }

  [[gnu::always_inline]] void load(int64_t b, WeightBlock& o) const {
    const uint8_t* base = w_ + static_cast<size_t>(b) * sizeof(BlockQ4_0);
    if (b % kScalesPerLoad == 0) {
      Scales::load(base, offset_, blocks_ - b, scales_);
      simd::prefetch_tile_ahead<kScalesPerLoad * kRows * sizeof(BlockQ4_0)>(
          next_, static_cast<size_t>(b) * kRows * sizeof(BlockQ4_0));
    }
    __m512i t[4];
    lanes::transpose16x4(base + offsetof(BlockQ4_0, qs), offset_, t);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      o.u[j] = _mm512_and_si512(t[j], low4);
      o.u[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t[j], 4), low4);
    }
    o.dw = _mm512_load_ps(scales_[b % kScalesPerLoad]);
  }

 private:
  // Four 18-byte blocks' scales per 64-byte load (words 0, 9, 18, 27).
  static constexpr int kScalesPerLoad = 4;
  using Scales = lanes::ScaleTree<kScalesPerLoad, sizeof(BlockQ4_0) / 2>;

  const uint8_t* w_;
  const uint8_t* next_;
  int64_t blocks_;
  size_t offset_[kRows];
  alignas(64) mutable float scales_[kScalesPerLoad][kRows];
};

constexpr PackedDot kPackedQ4_0 = lanes::packed_dot<Q4Rows, 8>();

#endif  // STRATA_CPU_AVX512

}  // namespace

const PackedDot* packed_dot_q4_0(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512)
  if (weight_type == core::Type::kQ4_0 && k % kQK8_0 == 0) {
    return &kPackedQ4_0;
  }
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
