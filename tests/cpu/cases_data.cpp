// Cases for mul_mat and the data-movement ops (get_rows, cpy, set_rows).
#include <cmath>
#include <string>
#include <vector>

#include "conformance_cases.h"
#include "core/blocks.h"

namespace strata::cpu::test {

using core::Context;
using core::Tensor;
using core::Type;

void mul_mat_cases(std::vector<Case>& out) {
  for (Type t : kWeightTypes) {
    const bool super_blocks = core::block_size(t) == core::kQK_K;
    const std::vector<int64_t> ks =
        super_blocks ? std::vector<int64_t>{256, 768, 4096} : std::vector<int64_t>{96, 160, 4096};
    for (int64_t k : ks) {
      for (int64_t m : {1, 3, 7, 33}) {
        for (int64_t n : {1, 3, 7, 33}) {
          out.push_back({"mul_mat_" + tname(t) + "_k" + std::to_string(k) + "_m" +
                             std::to_string(m) + "_n" + std::to_string(n),
                         [=](Context& ctx, Inputs&) {
                           return std::vector{core::mul_mat(ctx, leaf(ctx, t, {k, m, 1, 1}),
                                                            f32(ctx, {k, n, 1, 1}))};
                         },
                         kDot, kDotFloor});
        }
      }
    }
    const std::string p = "mul_mat_" + tname(t) + "_";
    const auto add = [&](const std::string& name, auto build) {
      out.push_back({p + name, build, kDot, kDotFloor});
    };
    // Row lengths of 64 / 96 / 128 for 32-element blocks, one super-block for the K-quants.
    const int64_t k64 = fit_k(t, 64), k96 = fit_k(t, 96), k128 = fit_k(t, 128);
    add("broadcast", [=](Context& ctx, Inputs&) {
      return std::vector{
          core::mul_mat(ctx, leaf(ctx, t, {k64, 5, 2, 3}), f32(ctx, {k64, 3, 4, 6}))};
    });
    add("grouped_query_decode", [=](Context& ctx, Inputs&) {  // one row per head, 4 heads per batch
      Tensor* x = core::permute(ctx, f32(ctx, {k64, 8, 1, 1}), {0, 2, 1, 3});
      return std::vector{core::mul_mat(ctx, leaf(ctx, t, {k64, 7, 2, 1}), x)};
    });
    add("batched", [=](Context& ctx, Inputs&) {
      return std::vector{
          core::mul_mat(ctx, leaf(ctx, t, {k96, 7, 3, 1}), f32(ctx, {k96, 5, 3, 1}))};
    });
    add("x_permuted", [=](Context& ctx, Inputs&) {
      Tensor* x = core::permute(ctx, f32(ctx, {k64, 3, 5, 1}), {0, 2, 1, 3});
      return std::vector{core::mul_mat(ctx, leaf(ctx, t, {k64, 7, 3, 1}), x)};
    });
    add("x_transposed", [=](Context& ctx, Inputs&) {
      Tensor* x = core::transpose(ctx, f32(ctx, {5, k64, 1, 1}));
      return std::vector{core::mul_mat(ctx, leaf(ctx, t, {k64, 7, 1, 1}), x)};
    });
    add("x_view_offset", [=](Context& ctx, Inputs&) {
      Tensor* x = row_window(ctx, f32(ctx, {k64, 9, 1, 1}), 2, 5);
      return std::vector{core::mul_mat(ctx, leaf(ctx, t, {k64, 7, 1, 1}), x)};
    });
    add("w_view_offset", [=](Context& ctx, Inputs&) {
      Tensor* w = row_window(ctx, leaf(ctx, t, {k64, 12, 1, 1}), 3, 7);
      return std::vector{core::mul_mat(ctx, w, f32(ctx, {k64, 4, 1, 1}))};
    });
    add("large", [=](Context& ctx, Inputs&) {
      return std::vector{
          core::mul_mat(ctx, leaf(ctx, t, {k128, 300, 1, 1}), f32(ctx, {k128, 70, 1, 1}))};
    });
  }
  // Strided weight rows (a transposed KV-cache view) and rows that are not a whole number of
  // vectors exist only for plain float types.
  for (Type t : kFloatTypes) {
    for (int64_t k : {1, 37}) {
      for (int64_t m : {1, 5}) {
        out.push_back(
            {"mul_mat_" + tname(t) + "_k" + std::to_string(k) + "_m" + std::to_string(m) + "_n3",
             [=](Context& ctx, Inputs&) {
               return std::vector{
                   core::mul_mat(ctx, leaf(ctx, t, {k, m, 1, 1}), f32(ctx, {k, 3, 1, 1}))};
             },
             kDot, kDotFloor});
      }
    }
    out.push_back({"mul_mat_" + tname(t) + "_k45_w_transposed",
                   [=](Context& ctx, Inputs&) {
                     Tensor* w = core::transpose(ctx, leaf(ctx, t, {6, 45, 1, 1}));
                     return std::vector{core::mul_mat(ctx, w, f32(ctx, {45, 7, 1, 1}))};
                   },
                   kDot, kDotFloor});
    out.push_back({"mul_mat_" + tname(t) + "_w_transposed",
                   [=](Context& ctx, Inputs&) {
                     Tensor* w = core::transpose(ctx, leaf(ctx, t, {7, 64, 3, 1}));
                     return std::vector{core::mul_mat(ctx, w, f32(ctx, {64, 5, 6, 1}))};
                   },
                   kDot, kDotFloor});
    out.push_back({"mul_mat_" + tname(t) + "_w_transposed_x_transposed",
                   [=](Context& ctx, Inputs&) {
                     Tensor* w = core::transpose(ctx, leaf(ctx, t, {9, 40, 1, 1}));
                     Tensor* x = core::transpose(ctx, f32(ctx, {3, 40, 1, 1}));
                     return std::vector{core::mul_mat(ctx, w, x)};
                   },
                   kDot, kDotFloor});
  }
}

namespace {

void get_rows_cases(std::vector<Case>& out) {
  for (Type t : kWeightTypes) {
    const std::string p = "get_rows_" + tname(t) + "_";
    const int64_t k64 = fit_k(t, 64), k96 = fit_k(t, 96);
    out.push_back({p + "plain", [=](Context& ctx, Inputs& in) {
                     Tensor* ids = ids_leaf(ctx, in, {3, 0, 9, 9, 4, 1, 7}, {7, 1, 1, 1});
                     return std::vector{core::get_rows(ctx, leaf(ctx, t, {k64, 10, 1, 1}), ids)};
                   }});
    out.push_back(
        {p + "batched", [=](Context& ctx, Inputs& in) {
           Tensor* ids = ids_leaf(ctx, in, random_ints(5 * 2 * 3, 0, 10, 11), {5, 2, 3, 1});
           return std::vector{core::get_rows(ctx, leaf(ctx, t, {k96, 10, 2, 3}), ids)};
         }});
    out.push_back({p + "view_offset_strided_ids", [=](Context& ctx, Inputs& in) {
                     Tensor* ids0 = ids_leaf(ctx, in, random_ints(14, 0, 10, 12), {14, 1, 1, 1});
                     Tensor* ids = core::view(ctx, ids0, {7, 1, 1, 1}, {8, 56, 56, 56}, 0);
                     Tensor* table = row_window(ctx, leaf(ctx, t, {k64, 20, 1, 1}), 5, 10);
                     return std::vector{core::get_rows(ctx, table, ids)};
                   }});
  }
  for (Type t : kFloatTypes) {
    out.push_back({"get_rows_" + tname(t) + "_transposed_table", [=](Context& ctx, Inputs& in) {
                     Tensor* ids = ids_leaf(ctx, in, {0, 63, 5, 5, 17}, {5, 1, 1, 1});
                     Tensor* table = core::transpose(ctx, leaf(ctx, t, {64, 37, 1, 1}));
                     return std::vector{core::get_rows(ctx, table, ids)};
                   }});
  }
}

// Whether cpy from -> to is worth a case: every conversion to or from a float type, every
// same-type copy (bytes), and conversions among the 32-element block types; a conversion
// between two different block types where one is a K-quant only chains cases already here.
bool cpy_pair_wanted(Type from, Type to) {
  const bool k_quant = core::block_size(from) == core::kQK_K || core::block_size(to) == core::kQK_K;
  return from == to || !core::is_quantized(from) || !core::is_quantized(to) || !k_quant;
}

void cpy_cases(std::vector<Case>& out) {
  for (Type from : kWeightTypes) {
    for (Type to : kWeightTypes) {
      if (!cpy_pair_wanted(from, to)) continue;
      const std::string p = "cpy_" + tname(from) + "_to_" + tname(to) + "_";
      const Type wider = core::block_size(from) > core::block_size(to) ? from : to;
      const int64_t k64 = fit_k(wider, 64), k96 = fit_k(wider, 96);
      out.push_back({p + "dense", [=](Context& ctx, Inputs&) {
                       return std::vector{core::cast(ctx, leaf(ctx, from, {k64, 5, 3, 1}), to)};
                     }});
      out.push_back({p + "row_window", [=](Context& ctx, Inputs&) {
                       return std::vector{core::cast(
                           ctx, row_window(ctx, leaf(ctx, from, {k96, 8, 1, 1}), 2, 3), to)};
                     }});
    }
  }
  for (Type from : kFloatTypes) {
    for (Type to : kWeightTypes) {
      const int64_t k64 = fit_k(to, 64);
      out.push_back(
          {"cpy_" + tname(from) + "_to_" + tname(to) + "_permuted", [=](Context& ctx, Inputs&) {
             Tensor* a = core::permute(ctx, leaf(ctx, from, {5, k64, 3, 1}), {1, 0, 2, 3});
             return std::vector{core::cast(ctx, a, to)};
           }});
    }
    out.push_back({"cpy_" + tname(from) + "_cont_4d", [=](Context& ctx, Inputs&) {
                     Tensor* a = core::permute(ctx, leaf(ctx, from, {6, 5, 4, 3}), {2, 0, 3, 1});
                     return std::vector{core::cont(ctx, a)};
                   }});
  }
  out.push_back({"cpy_i32_to_f32", [](Context& ctx, Inputs& in) {
                   Tensor* a = ids_leaf(ctx, in, random_ints(40, -1000, 1000, 13), {8, 5, 1, 1});
                   return std::vector{core::cast(ctx, a, Type::kF32)};
                 }});
  out.push_back(
      {"cpy_i32_to_i32_large_values", [](Context& ctx, Inputs& in) {
         // Values f32 cannot hold exactly: a same-type copy must move bytes.
         Tensor* a = ids_leaf(ctx, in, {16777217, -16777219, 2147483647, 5}, {4, 1, 1, 1});
         return std::vector{core::cast(ctx, a, Type::kI32)};
       }});
  out.push_back({"cpy_f32_to_i32", [](Context& ctx, Inputs& in) {
                   Tensor* a = f32(ctx, {16, 3, 1, 1});
                   in.f32[a] = uniform(48, -100.0f, 100.0f, 14);
                   return std::vector{core::cast(ctx, a, Type::kI32)};
                 }});
}

void set_rows_cases(std::vector<Case>& out) {
  for (Type t : kWeightTypes) {
    const std::string p = "set_rows_" + tname(t) + "_";
    const int64_t k32 = fit_k(t, 32), k64 = fit_k(t, 64);
    out.push_back(
        {p + "plain", [=](Context& ctx, Inputs& in) {
           Tensor* cache = leaf(ctx, t, {k64, 10, 1, 1});
           Tensor* ids = ids_leaf(ctx, in, {7, 2, 9, 0}, {4, 1, 1, 1});
           return std::vector{core::set_rows(ctx, cache, f32(ctx, {k64, 4, 1, 1}), ids), cache};
         }});
    out.push_back(
        {p + "repeated_ids_last_wins", [=](Context& ctx, Inputs& in) {
           Tensor* cache = leaf(ctx, t, {k32, 6, 1, 1});
           Tensor* ids = ids_leaf(ctx, in, {3, 3, 1, 3, 4, 1}, {6, 1, 1, 1});
           return std::vector{core::set_rows(ctx, cache, f32(ctx, {k32, 6, 1, 1}), ids), cache};
         }});
    out.push_back({p + "window_transposed_rows", [=](Context& ctx, Inputs& in) {
                     Tensor* cache = leaf(ctx, t, {k64, 20, 1, 1});
                     Tensor* window = row_window(ctx, cache, 4, 10);
                     Tensor* rows = core::transpose(ctx, f32(ctx, {3, k64, 1, 1}));
                     Tensor* ids = ids_leaf(ctx, in, {9, 0, 5}, {3, 1, 1, 1});
                     return std::vector{core::set_rows(ctx, window, rows, ids), cache};
                   }});
  }
  for (Type t : kFloatTypes) {
    // A transposed cache (ggml's V layout): destination elements are strided.
    out.push_back(
        {"set_rows_" + tname(t) + "_transposed_dst", [=](Context& ctx, Inputs& in) {
           Tensor* cache = leaf(ctx, t, {10, 48, 1, 1});
           Tensor* dst = core::transpose(ctx, cache);
           Tensor* ids = ids_leaf(ctx, in, {1, 8, 4, 6, 0}, {5, 1, 1, 1});
           return std::vector{core::set_rows(ctx, dst, f32(ctx, {48, 5, 1, 1}), ids), cache};
         }});
  }
}

}  // namespace

void data_cases(std::vector<Case>& out) {
  get_rows_cases(out);
  cpy_cases(out);
  set_rows_cases(out);
}

}  // namespace strata::cpu::test
