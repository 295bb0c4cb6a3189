#include "model/synth/recipe.h"

#include <array>

namespace strata::model {
namespace {

using core::Type;

// Plain type names give pure files. Their ftype ids are llama.cpp's "mostly <type>" ones; for
// the pure K types that is the _S recipe's id, whose files differ only in the output matrix.
constexpr std::array kFileTypes = {
    FileType{"f32", 0, Type::kF32, Recipe::kPure},
    FileType{"f16", 1, Type::kF16, Recipe::kPure},
    FileType{"bf16", 32, Type::kBF16, Recipe::kPure},
    FileType{"q8_0", 7, Type::kQ8_0, Recipe::kPure},
    FileType{"q4_0", 2, Type::kQ4_0, Recipe::kPure},
    FileType{"q4_1", 3, Type::kQ4_1, Recipe::kPure},
    FileType{"q5_0", 8, Type::kQ5_0, Recipe::kPure},
    FileType{"q5_1", 9, Type::kQ5_1, Recipe::kPure},
    FileType{"q2_k", 10, Type::kQ2_K, Recipe::kPure},
    FileType{"q3_k", 11, Type::kQ3_K, Recipe::kPure},
    FileType{"q4_k", 14, Type::kQ4_K, Recipe::kPure},
    FileType{"q5_k", 16, Type::kQ5_K, Recipe::kPure},
    FileType{"q6_k", 18, Type::kQ6_K, Recipe::kPure},
    FileType{"q3_k_s", 11, Type::kQ3_K, Recipe::kQ3_K_S},
    FileType{"q3_k_m", 12, Type::kQ3_K, Recipe::kQ3_K_M},
    FileType{"q3_k_l", 13, Type::kQ3_K, Recipe::kQ3_K_L},
    FileType{"q4_k_s", 14, Type::kQ4_K, Recipe::kQ4_K_S},
    FileType{"q4_k_m", 15, Type::kQ4_K, Recipe::kQ4_K_M},
    FileType{"q5_k_s", 16, Type::kQ5_K, Recipe::kQ5_K_S},
    FileType{"q5_k_m", 17, Type::kQ5_K, Recipe::kQ5_K_M},
};

// llama.cpp's layers that get more bits in the _M recipes: the first and last eighth, and
// every third layer in between.
bool use_more_bits(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

Type attn_v_type(const FileType& ft, int64_t layer, int64_t n_layer) {
  switch (ft.recipe) {
    case Recipe::kQ3_K_M:
      return layer < 2 ? Type::kQ5_K : Type::kQ4_K;
    case Recipe::kQ3_K_L:
      return Type::kQ5_K;
    case Recipe::kQ4_K_S:
      return layer < 4 ? Type::kQ5_K : ft.base;
    case Recipe::kQ4_K_M:
    case Recipe::kQ5_K_M:
      return use_more_bits(layer, n_layer) ? Type::kQ6_K : ft.base;
    case Recipe::kPure:
    case Recipe::kQ3_K_S:
    case Recipe::kQ5_K_S:
      return ft.base;
  }
  return ft.base;
}

Type ffn_down_type(const FileType& ft, int64_t layer, int64_t n_layer) {
  switch (ft.recipe) {
    case Recipe::kQ3_K_M:
      return layer < n_layer / 16 ? Type::kQ5_K : Type::kQ4_K;
    case Recipe::kQ3_K_L:
      return Type::kQ5_K;
    case Recipe::kQ4_K_S:
      return layer < n_layer / 8 ? Type::kQ5_K : ft.base;
    case Recipe::kQ4_K_M:
    case Recipe::kQ5_K_M:
      return use_more_bits(layer, n_layer) ? Type::kQ6_K : ft.base;
    case Recipe::kPure:
    case Recipe::kQ3_K_S:
    case Recipe::kQ5_K_S:
      return ft.base;
  }
  return ft.base;
}

Type attn_output_type(const FileType& ft) {
  if (ft.recipe == Recipe::kQ3_K_M) return Type::kQ4_K;
  if (ft.recipe == Recipe::kQ3_K_L) return Type::kQ5_K;
  return ft.base;
}

// The type a recipe wants, before the row-length check.
Type wanted_type(const FileType& ft, WeightRole role, int64_t layer, int64_t n_layer,
                 int64_t row_length) {
  if (role == WeightRole::kNorm) return Type::kF32;
  if (ft.recipe == Recipe::kPure) return ft.base;
  switch (role) {
    case WeightRole::kOutput:
      // llama.cpp checks the output's row against the base type's block, not Q6_K's.
      return row_length % core::block_size(ft.base) != 0 ? Type::kQ8_0 : Type::kQ6_K;
    case WeightRole::kAttnV:
      return attn_v_type(ft, layer, n_layer);
    case WeightRole::kFfnDown:
      return ffn_down_type(ft, layer, n_layer);
    case WeightRole::kAttnOutput:
      return attn_output_type(ft);
    case WeightRole::kTokenEmbd:
    case WeightRole::kNorm:
    case WeightRole::kAttnQ:
    case WeightRole::kAttnK:
    case WeightRole::kFfnGate:
    case WeightRole::kFfnUp:
      return ft.base;
  }
  return ft.base;
}

Type fallback_type(Type t) {
  switch (t) {
    case Type::kQ2_K:
    case Type::kQ3_K:
      return Type::kQ4_0;
    case Type::kQ4_K:
      return Type::kQ5_0;
    case Type::kQ5_K:
      return Type::kQ5_1;
    case Type::kQ6_K:
      return Type::kQ8_0;
    case Type::kF32:
    case Type::kF16:
    case Type::kQ4_0:
    case Type::kQ4_1:
    case Type::kQ5_0:
    case Type::kQ5_1:
    case Type::kQ8_0:
    case Type::kQ8_1:
    case Type::kQ8_K:
    case Type::kI8:
    case Type::kI16:
    case Type::kI32:
    case Type::kI64:
    case Type::kF64:
    case Type::kBF16:
    case Type::kQ4_0x16:
    case Type::kQ4_Kx16:
    case Type::kQ8_0x16:
      return Type::kF16;
  }
  return Type::kF16;
}

}  // namespace

std::optional<FileType> find_file_type(std::string_view name) {
  for (const FileType& ft : kFileTypes) {
    if (ft.name == name) return ft;
  }
  return std::nullopt;
}

std::vector<std::string_view> file_type_names() {
  std::vector<std::string_view> names;
  for (const FileType& ft : kFileTypes) names.push_back(ft.name);
  return names;
}

Type weight_type(const FileType& ft, WeightRole role, int64_t layer, int64_t n_layer,
                 int64_t row_length) {
  Type t = wanted_type(ft, role, layer, n_layer, row_length);
  if (row_length % core::block_size(t) == 0) return t;
  t = fallback_type(t);
  return row_length % core::block_size(t) == 0 ? t : Type::kF16;
}

}  // namespace strata::model
