#include "core/types.h"

#include <array>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "core/quants/interleave.h"
#include "core/quants/quants.h"

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

struct Entry {
  Type type;
  TypeTraits traits;
};

using T = Type;

// Block sizes and byte sizes of every GGUF type, so files of any type can be validated and
// inspected; conversions exist for the types this build computes with. The quantized types'
// conversions live in quants/, one file per family.
constexpr std::array kTable = {
    Entry{T::kF32, {"f32", 1, 4, false, f32_to_float, f32_from_float, T::kF32}},
    Entry{T::kF16, {"f16", 1, 2, false, f16_to_float, f16_from_float, T::kF16}},
    Entry{T::kQ4_0, {"q4_0", 32, 18, true, q4_0_to_float, q4_0_from_float, T::kQ8_0}},
    Entry{T::kQ4_1, {"q4_1", 32, 20, true, q4_1_to_float, q4_1_from_float, T::kQ8_1}},
    Entry{T::kQ5_0, {"q5_0", 32, 22, true, q5_0_to_float, q5_0_from_float, T::kQ8_0}},
    Entry{T::kQ5_1, {"q5_1", 32, 24, true, q5_1_to_float, q5_1_from_float, T::kQ8_1}},
    Entry{T::kQ8_0, {"q8_0", 32, 34, true, q8_0_to_float, q8_0_from_float, T::kQ8_0}},
    Entry{T::kQ8_1, {"q8_1", 32, 36, true, q8_1_to_float, q8_1_from_float, T::kQ8_1}},
    Entry{T::kQ2_K, {"q2_k", 256, 84, true, q2_k_to_float, q2_k_from_float, T::kQ8_K}},
    Entry{T::kQ3_K, {"q3_k", 256, 110, true, q3_k_to_float, q3_k_from_float, T::kQ8_K}},
    Entry{T::kQ4_K, {"q4_k", 256, 144, true, q4_k_to_float, q4_k_from_float, T::kQ8_K}},
    Entry{T::kQ5_K, {"q5_k", 256, 176, true, q5_k_to_float, q5_k_from_float, T::kQ8_K}},
    Entry{T::kQ6_K, {"q6_k", 256, 210, true, q6_k_to_float, q6_k_from_float, T::kQ8_K}},
    Entry{T::kQ8_K, {"q8_k", 256, 292, true, q8_k_to_float, q8_k_from_float, T::kQ8_K}},
    Entry{T::kI8, {"i8", 1, 1, false, nullptr, nullptr, T::kF32}},
    Entry{T::kI16, {"i16", 1, 2, false, nullptr, nullptr, T::kF32}},
    Entry{T::kI32, {"i32", 1, 4, false, i32_to_float, i32_from_float, T::kF32}},
    Entry{T::kI64, {"i64", 1, 8, false, nullptr, nullptr, T::kF32}},
    Entry{T::kF64, {"f64", 1, 8, false, nullptr, nullptr, T::kF32}},
    Entry{T::kBF16, {"bf16", 1, 2, false, bf16_to_float_row, bf16_from_float_row, T::kBF16}},
    // Rows are not addressable one by one, so there is no row conversion.
    Entry{T::kQ4_0x16, {"q4_0x16", 32, 18, true, nullptr, nullptr, T::kQ8_0}},
    Entry{T::kQ4_Kx16, {"q4_kx16", 256, 144, true, nullptr, nullptr, T::kQ8_K}},
    Entry{T::kQ8_0x16, {"q8_0x16", 32, 34, true, nullptr, nullptr, T::kQ8_0}},
};

constexpr bool is_gguf(Type t) {
  return t != T::kQ4_0x16 && t != T::kQ4_Kx16 && t != T::kQ8_0x16;
}

constexpr size_t table_type_size(Type t) {
  for (const auto& e : kTable) {
    if (e.type == t) return e.traits.type_size;
  }
  return 0;
}
static_assert(table_type_size(T::kQ4_0) == sizeof(BlockQ4_0));
static_assert(table_type_size(T::kQ4_1) == sizeof(BlockQ4_1));
static_assert(table_type_size(T::kQ5_0) == sizeof(BlockQ5_0));
static_assert(table_type_size(T::kQ5_1) == sizeof(BlockQ5_1));
static_assert(table_type_size(T::kQ8_0) == sizeof(BlockQ8_0));
static_assert(table_type_size(T::kQ8_1) == sizeof(BlockQ8_1));
static_assert(table_type_size(T::kQ2_K) == sizeof(BlockQ2_K));
static_assert(table_type_size(T::kQ3_K) == sizeof(BlockQ3_K));
static_assert(table_type_size(T::kQ4_K) == sizeof(BlockQ4_K));
static_assert(table_type_size(T::kQ5_K) == sizeof(BlockQ5_K));
static_assert(table_type_size(T::kQ6_K) == sizeof(BlockQ6_K));
static_assert(table_type_size(T::kQ8_K) == sizeof(BlockQ8_K));
static_assert(table_type_size(T::kQ4_0x16) == sizeof(BlockQ4_0));
static_assert(table_type_size(T::kQ4_Kx16) == sizeof(BlockQ4_K));
static_assert(table_type_size(T::kQ8_0x16) == sizeof(BlockQ8_0));

}  // namespace

std::optional<Type> type_from_id(uint32_t id) {
  for (const auto& e : kTable) {
    if (static_cast<uint32_t>(e.type) == id && is_gguf(e.type)) return e.type;
  }
  return std::nullopt;
}

const TypeTraits& traits(Type t) {
  for (const auto& e : kTable) {
    if (e.type == t) return e.traits;
  }
  // Every enumerator is in the table; a value outside the enum is a caller bug.
  static const TypeTraits kInvalid{"invalid", 1, 0, false, nullptr, nullptr, Type::kF32};
  return kInvalid;
}

int64_t interleaved_rows(Type t) {
  if (t == T::kQ4_0x16) return BlockQ4_0x16::kRows;
  if (t == T::kQ4_Kx16) return BlockQ4_Kx16::kRows;
  if (t == T::kQ8_0x16) return BlockQ8_0x16::kRows;
  return 1;
}

std::optional<Type> type_from_name(std::string_view name) {
  for (const auto& e : kTable) {
    if (e.traits.name == name && is_gguf(e.type)) return e.type;
  }
  return std::nullopt;
}

}  // namespace strata::core
