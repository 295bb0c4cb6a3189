// Element types with GGUF's numbering and block layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::core {

/// Tensor element types. Values are GGUF's `ggml_type` ids, so a file's type field maps
/// directly. Quantized types store `block_size` elements in `type_size` bytes.
enum class Type : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
  /// Not a GGUF type: q4_0 rows regrouped sixteen at a time at load (core/quants/interleave.h),
  /// the layout the AVX-512 kernels read without transposing. Only mul_mat takes it.
  kQ4_0x16 = 1002,
  /// Not a GGUF type: q4_k rows regrouped sixteen at a time at load, like kQ4_0x16.
  kQ4_Kx16 = 1003,
  /// Not a GGUF type: q8_0 rows regrouped sixteen at a time at load, like kQ4_0x16.
  kQ8_0x16 = 1004,
};

/// Converts `n` elements (a multiple of the block size) of a row to float.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
/// Converts `n` floats (a multiple of the block size) to the type, reference rounding.
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);

/// Static description of a type. Conversions are null for types this build cannot compute with.
struct TypeTraits {
  std::string_view name;
  int64_t block_size;  ///< elements per block (1 for plain types)
  size_t type_size;    ///< bytes per block
  bool quantized;
  ToFloatFn to_float;
  FromFloatFn from_float;
  /// The type activations are converted to before a dot product with a weight of this type
  /// (llama.cpp's vec_dot_type): the float types keep their own, Q4_0 / Q5_0 / Q8_0 take
  /// Q8_0, Q4_1 / Q5_1 take Q8_1, the K-quants take Q8_K. F32 for types that are never weights.
  Type dot_type;
};

/// Traits of a known type id; nullopt for ids that are not GGUF types (or removed ones, or
/// strata's own load-time layouts).
std::optional<Type> type_from_id(uint32_t id);
const TypeTraits& traits(Type t);
inline std::string_view type_name(Type t) {
  return traits(t).name;
}
inline int64_t block_size(Type t) {
  return traits(t).block_size;
}
inline size_t type_size(Type t) {
  return traits(t).type_size;
}
inline bool is_quantized(Type t) {
  return traits(t).quantized;
}
/// The activation type a dot product with weights of type `t` works in (see TypeTraits).
inline Type dot_type(Type t) {
  return traits(t).dot_type;
}
/// Bytes of a row of `n` elements (n must be a multiple of the block size).
inline size_t row_size(Type t, int64_t n) {
  return type_size(t) * static_cast<size_t>(n / block_size(t));
}
/// True when this build can convert the type to and from float (weights, caches, activations).
inline bool is_computable(Type t) {
  return traits(t).to_float != nullptr;
}
/// Rows per group of a type whose rows are interleaved in groups (the group's rows share its
/// bytes, so only whole groups can be addressed); 1 for every GGUF type.
int64_t interleaved_rows(Type t);
/// Type by its lower-case name ("q8_0", "f16"); nullopt when unknown or not a GGUF type.
std::optional<Type> type_from_name(std::string_view name);

}  // namespace strata::core
