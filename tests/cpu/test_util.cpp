#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace strata::cpu::test {

using core::Tensor;

Placement::Placement(const core::Graph& g) {
  std::vector<Tensor*> all = g.leafs;
  all.insert(all.end(), g.nodes.begin(), g.nodes.end());
  for (Tensor* t : all) {
    if (t->view_src != nullptr) continue;
    // Exactly the tensor's bytes, so AddressSanitizer catches any kernel reading past them
    // (one byte for an empty tensor, so it still gets a valid address).
    buffers_.emplace_back(std::max<size_t>(t->nbytes(), 1), uint8_t{0});
    t->data = buffers_.back().data();
  }
  for (Tensor* t : all) {
    if (t->view_src == nullptr) continue;
    t->data = static_cast<uint8_t*>(core::storage_of(t)->data) + t->view_offset;
  }
}

void fill_leafs(const core::Graph& g, const Inputs& inputs, uint64_t seed) {
  for (size_t li = 0; li < g.leafs.size(); ++li) {
    const Tensor& t = *g.leafs[li];
    const size_t n = static_cast<size_t>(t.nelements());
    if (auto it = inputs.i32.find(&t); it != inputs.i32.end()) {
      std::memcpy(t.data, it->second.data(), std::min(n, it->second.size()) * sizeof(int32_t));
      continue;
    }
    // Types without a row conversion (load-time layouts) are the caller's to fill.
    if (t.type == core::Type::kI32 || core::traits(t.type).from_float == nullptr) continue;
    std::vector<float> values;
    if (auto it = inputs.f32.find(&t); it != inputs.f32.end()) {
      values = it->second;
      values.resize(n);
    } else {
      std::mt19937_64 rng(seed * 1000003 + li);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      values.resize(n);
      for (float& v : values) v = dist(rng);
    }
    // Leafs are contiguous: the whole tensor converts as one row.
    core::traits(t.type).from_float(values.data(), t.data, static_cast<int64_t>(n));
  }
}

std::vector<float> read_floats(const Tensor& t) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(t.nelements()));
  const auto& tr = core::traits(t.type);
  std::vector<float> row(static_cast<size_t>(t.ne[0]));
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
        const uint8_t* p = t.row_ptr(i1, i2, i3);
        if (core::is_quantized(t.type)) {
          tr.to_float(p, row.data(), t.ne[0]);
        } else {
          for (int64_t i0 = 0; i0 < t.ne[0]; ++i0)
            tr.to_float(p + i0 * t.nb[0], &row[static_cast<size_t>(i0)], 1);
        }
        out.insert(out.end(), row.begin(), row.end());
      }
    }
  }
  return out;
}

std::vector<uint8_t> read_bytes(const Tensor& t) {
  std::vector<uint8_t> out;
  const size_t ts = core::type_size(t.type);
  const int64_t per_row = t.ne[0] / core::block_size(t.type);
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
        for (int64_t b = 0; b < per_row; ++b) {
          const uint8_t* p = t.row_ptr(i1, i2, i3) + b * t.nb[0];
          out.insert(out.end(), p, p + ts);
        }
      }
    }
  }
  return out;
}

double relative_error(const std::vector<float>& got, const std::vector<float>& ref, double floor) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double max_ref = floor;
  for (float r : ref) {
    if (std::isfinite(r)) max_ref = std::max(max_ref, std::fabs(static_cast<double>(r)));
  }
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = got[i];
    const float r = ref[i];
    if (std::isnan(g) || std::isnan(r) || std::isinf(g) || std::isinf(r)) {
      // Non-finite values must agree exactly (NaN with NaN, inf with the same inf).
      const bool same = (std::isnan(g) && std::isnan(r)) || g == r;
      if (!same) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::fabs(static_cast<double>(g) - r));
  }
  return max_ref > 0.0 ? worst / max_ref : worst;
}

std::vector<int32_t> random_ints(int64_t n, int32_t lo, int32_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi - 1);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = dist(rng);
  return v;
}

}  // namespace strata::cpu::test
