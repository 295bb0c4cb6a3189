#include "cpu/reference/tensor_io.h"

#include <cstring>

namespace strata::cpu::reference {
namespace {

uint8_t* at(const core::Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return static_cast<uint8_t*>(t.data) + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

}  // namespace

float get(const core::Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  float v = 0.0f;
  core::traits(t.type).to_float(at(t, i0, i1, i2, i3), &v, 1);
  return v;
}

void set(const core::Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v) {
  core::traits(t.type).from_float(&v, at(t, i0, i1, i2, i3), 1);
}

std::vector<float> get_row(const core::Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
  std::vector<float> row(static_cast<size_t>(t.ne[0]));
  if (core::is_quantized(t.type)) {
    core::traits(t.type).to_float(at(t, 0, i1, i2, i3), row.data(), t.ne[0]);
  } else {
    for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) row[static_cast<size_t>(i0)] = get(t, i0, i1, i2, i3);
  }
  return row;
}

void set_row(const core::Tensor& t, int64_t i1, int64_t i2, int64_t i3,
             const std::vector<float>& v) {
  if (core::is_quantized(t.type)) {
    core::traits(t.type).from_float(v.data(), at(t, 0, i1, i2, i3), t.ne[0]);
  } else {
    for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) set(t, i0, i1, i2, i3, v[static_cast<size_t>(i0)]);
  }
}

int32_t get_i32(const core::Tensor& t, int64_t i0, int64_t i1, int64_t i2) {
  int32_t v;
  std::memcpy(&v, at(t, i0, i1, i2, 0), sizeof v);
  return v;
}

}  // namespace strata::cpu::reference
