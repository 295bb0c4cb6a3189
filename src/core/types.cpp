#include "core/types.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"

namespace strata::core {
namespace {

void f32_to_float(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void f32_from_float(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const Half*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(h[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<Half*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = float_to_half(src[i]);
}
void bf16_to_float_row(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const BFloat16*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(h[i]);
}
void bf16_from_float_row(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<BFloat16*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = float_to_bf16(src[i]);
}
void i32_to_float(const void* src, float* dst, int64_t n) {
  const auto* v = static_cast<const int32_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(v[i]);
}
void i32_from_float(const float* src, void* dst, int64_t n) {
  auto* v = static_cast<int32_t*>(dst);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(src[i]);
}

void q4_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float d = half_to_float(b[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      dst[i * kQK4_0 + j] = d * static_cast<float>((b[i].qs[j] & 0x0f) - 8);
      dst[i * kQK4_0 + j + kQK4_0 / 2] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

// The scale maps the element of largest magnitude (sign included) to -8, so that value is
// represented exactly; this is the rounding llama.cpp's quantizer uses.
void q4_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* x = src + i * kQK4_0;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const int q1 =
          std::min(15, static_cast<int>(static_cast<int8_t>(x[j + kQK4_0 / 2] * id + 8.5f)));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void q8_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float d = half_to_float(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) dst[i * kQK8_0 + j] = d * static_cast<float>(b[i].qs[j]);
  }
}

void q8_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float* x = src + i * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    for (int j = 0; j < kQK8_0; ++j) b[i].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  }
}

struct Entry {
  Type type;
  TypeTraits traits;
};

// Block sizes and byte sizes of every GGUF type, so files of any type can be validated and
// inspected; conversions exist for the types this build computes with.
constexpr std::array kTable = {
    Entry{Type::kF32, {"f32", 1, 4, false, f32_to_float, f32_from_float}},
    Entry{Type::kF16, {"f16", 1, 2, false, f16_to_float, f16_from_float}},
    Entry{Type::kQ4_0, {"q4_0", 32, 18, true, q4_0_to_float, q4_0_from_float}},
    Entry{Type::kQ4_1, {"q4_1", 32, 20, true, nullptr, nullptr}},
    Entry{Type::kQ5_0, {"q5_0", 32, 22, true, nullptr, nullptr}},
    Entry{Type::kQ5_1, {"q5_1", 32, 24, true, nullptr, nullptr}},
    Entry{Type::kQ8_0, {"q8_0", 32, 34, true, q8_0_to_float, q8_0_from_float}},
    Entry{Type::kQ8_1, {"q8_1", 32, 36, true, nullptr, nullptr}},
    Entry{Type::kQ2_K, {"q2_k", 256, 84, true, nullptr, nullptr}},
    Entry{Type::kQ3_K, {"q3_k", 256, 110, true, nullptr, nullptr}},
    Entry{Type::kQ4_K, {"q4_k", 256, 144, true, nullptr, nullptr}},
    Entry{Type::kQ5_K, {"q5_k", 256, 176, true, nullptr, nullptr}},
    Entry{Type::kQ6_K, {"q6_k", 256, 210, true, nullptr, nullptr}},
    Entry{Type::kQ8_K, {"q8_k", 256, 292, true, nullptr, nullptr}},
    Entry{Type::kI8, {"i8", 1, 1, false, nullptr, nullptr}},
    Entry{Type::kI16, {"i16", 1, 2, false, nullptr, nullptr}},
    Entry{Type::kI32, {"i32", 1, 4, false, i32_to_float, i32_from_float}},
    Entry{Type::kI64, {"i64", 1, 8, false, nullptr, nullptr}},
    Entry{Type::kF64, {"f64", 1, 8, false, nullptr, nullptr}},
    Entry{Type::kBF16, {"bf16", 1, 2, false, bf16_to_float_row, bf16_from_float_row}},
};

}  // namespace

std::optional<Type> type_from_id(uint32_t id) {
  for (const auto& e : kTable) {
    if (static_cast<uint32_t>(e.type) == id) return e.type;
  }
  return std::nullopt;
}

const TypeTraits& traits(Type t) {
  for (const auto& e : kTable) {
    if (e.type == t) return e.traits;
  }
  // Every enumerator is in the table; a value outside the enum is a caller bug.
  static const TypeTraits kInvalid{"invalid", 1, 0, false, nullptr, nullptr};
  return kInvalid;
}

std::optional<Type> type_from_name(std::string_view name) {
  for (const auto& e : kTable) {
    if (e.traits.name == name) return e.type;
  }
  return std::nullopt;
}

}  // namespace strata::core
