// Reference fused attention, straight from the definition in core/ops.h, in double.
//
// The query is rounded to k's dot type exactly as the reference mul_mat rounds activations, so
// the scores are those of mul_mat(k, q); v rows are dequantized to f32 by core's to_float.
// Unlike the unfused chain (soft_max, then mul_mat(v^T, p)), the probabilities are never rounded
// to v's dot type: for an f16 cache that rounding (2^-11 relative per probability) is the
// largest difference between the two paths, and the fused one is the more precise.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/reference/ops.h"
#include "cpu/reference/tensor_io.h"

namespace strata::cpu::reference {
namespace {

using core::Tensor;

// The row as a dot product with a `type` row sees it: rounded by from_float and read back.
std::vector<float> rounded(const std::vector<float>& row, core::Type type) {
  const auto n = static_cast<int64_t>(row.size());
  std::vector<uint8_t> bytes(core::row_size(type, n));
  std::vector<float> out(row.size());
  core::traits(type).from_float(row.data(), bytes.data(), n);
  core::traits(type).to_float(bytes.data(), out.data(), n);
  return out;
}

}  // namespace

void flash_attn(const Tensor& dst) {
  const Tensor& q = *dst.src[0];
  const Tensor& k = *dst.src[1];
  const Tensor& v = *dst.src[2];
  const Tensor* mask = dst.src[3];
  const auto& fp = std::get<core::FlashAttnParams>(dst.params);
  const double scale = fp.scale;
  const double softcap = fp.softcap;
  const int64_t hd = q.ne[0], n_tokens = q.ne[1], n_head = q.ne[2];
  const int64_t n_kv = k.ne[1], group = n_head / k.ne[2];
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < n_head; ++h) {
      const std::vector<float> qr = rounded(get_row(q, t, h, 0), core::dot_type(k.type));
      const int64_t kvh = h / group;
      std::vector<double> s(static_cast<size_t>(n_kv), -INFINITY);
      double max = -INFINITY;
      for (int64_t j = 0; j < n_kv; ++j) {
        const double m = mask != nullptr ? get(*mask, j, t, 0, 0) : 0.0;
        if (m == -INFINITY) continue;
        const std::vector<float> kr = get_row(k, j, kvh, 0);
        double dot = 0.0;
        for (int64_t i = 0; i < hd; ++i) {
          dot += static_cast<double>(qr[static_cast<size_t>(i)]) * kr[static_cast<size_t>(i)];
        }
        const double logit =
            softcap != 0.0 ? softcap * std::tanh(dot * scale / softcap) : scale * dot;
        s[static_cast<size_t>(j)] = logit + m;
        max = std::max(max, s[static_cast<size_t>(j)]);
      }
      std::vector<double> out(static_cast<size_t>(hd), 0.0);
      double sum = 0.0;
      for (int64_t j = 0; j < n_kv && max != -INFINITY; ++j) {
        if (s[static_cast<size_t>(j)] == -INFINITY) continue;
        const double p = std::exp(s[static_cast<size_t>(j)] - max);
        sum += p;
        const std::vector<float> vr = get_row(v, j, kvh, 0);
        for (int64_t i = 0; i < hd; ++i)
          out[static_cast<size_t>(i)] += p * vr[static_cast<size_t>(i)];
      }
      // Every cell hidden: zeros, as soft_max gives for a row of -inf.
      for (int64_t i = 0; i < hd; ++i) {
        const double y = sum > 0.0 ? out[static_cast<size_t>(i)] / sum : 0.0;
        set(dst, i, h, t, 0, static_cast<float>(y));
      }
    }
  }
}

}  // namespace strata::cpu::reference
