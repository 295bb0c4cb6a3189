// Cases for the f32 math ops: elementwise, rms_norm, rope, soft_max, argmax.
#include <cmath>
#include <string>
#include <vector>

#include "conformance_cases.h"

namespace strata::cpu::test {

using core::Context;
using core::Tensor;
using core::Type;

namespace {

void elementwise_cases(std::vector<Case>& out) {
  using BinaryFn = Tensor* (*)(Context&, Tensor*, Tensor*);
  const std::pair<const char*, BinaryFn> binaries[] = {
      {"add", core::add}, {"mul", core::mul}, {"div", core::div}};
  for (const auto& [name, fn] : binaries) {
    const std::string p = std::string(name) + "_";
    const std::pair<const char*, core::Shape> bshapes[] = {{"same", {37, 5, 3, 2}},
                                                           {"row", {37, 1, 1, 1}},
                                                           {"col", {1, 5, 1, 1}},
                                                           {"partial", {37, 5, 1, 2}}};
    for (const auto& [bname, bshape] : bshapes) {
      out.push_back({p + "bcast_" + bname, [fn, bshape](Context& ctx, Inputs&) {
                       return std::vector{fn(ctx, f32(ctx, {37, 5, 3, 2}), f32(ctx, bshape))};
                     }});
    }
    out.push_back({p + "noncontiguous", [fn](Context& ctx, Inputs&) {
                     Tensor* a = core::permute(ctx, f32(ctx, {5, 37, 3, 1}), {1, 0, 2, 3});
                     Tensor* b = core::transpose(ctx, f32(ctx, {5, 37, 1, 1}));
                     return std::vector{fn(ctx, a, b)};
                   }});
    out.push_back(
        {p + "long", [fn](Context& ctx, Inputs&) {
           return std::vector{fn(ctx, f32(ctx, {4096, 3, 1, 1}), f32(ctx, {4096, 3, 1, 1}))};
         }});
  }
  const std::pair<const char*, core::Shape> shapes[] = {{"odd", {37, 5, 3, 1}},
                                                        {"long", {4096, 2, 1, 1}}};
  for (const auto& [sname, shape] : shapes) {
    out.push_back({std::string("scale_") + sname, [shape](Context& ctx, Inputs&) {
                     return std::vector{core::scale(ctx, f32(ctx, shape), -0.37f)};
                   }});
    out.push_back({std::string("silu_") + sname,
                   [shape](Context& ctx, Inputs& in) {
                     Tensor* a = f32(ctx, shape);
                     in.f32[a] = uniform(a->nelements(), -20.0f, 20.0f, 21);
                     return std::vector{core::silu(ctx, a)};
                   },
                   kFewUlps});
    out.push_back({std::string("swiglu_") + sname,
                   [shape](Context& ctx, Inputs& in) {
                     Tensor* g = f32(ctx, shape);
                     in.f32[g] = uniform(g->nelements(), -20.0f, 20.0f, 22);
                     return std::vector{core::swiglu(ctx, g, f32(ctx, shape))};
                   },
                   kFewUlps});
    // gelu's table and tanhf are the op's definition, so both sides agree bit for bit; the range
    // covers the clamps at +-10.
    out.push_back({std::string("gelu_") + sname, [shape](Context& ctx, Inputs& in) {
                     Tensor* a = f32(ctx, shape);
                     in.f32[a] = uniform(a->nelements(), -12.0f, 12.0f, 23);
                     return std::vector{core::gelu(ctx, a)};
                   }});
    out.push_back({std::string("tanh_") + sname, [shape](Context& ctx, Inputs& in) {
                     Tensor* a = f32(ctx, shape);
                     in.f32[a] = uniform(a->nelements(), -6.0f, 6.0f, 24);
                     return std::vector{core::tanh(ctx, a)};
                   }});
    out.push_back({std::string("rms_norm_") + sname,
                   [shape](Context& ctx, Inputs&) {
                     return std::vector{core::rms_norm(ctx, f32(ctx, shape), 1e-6f)};
                   },
                   kFewUlps});
  }
  out.push_back({"scale_permuted", [](Context& ctx, Inputs&) {
                   return std::vector{core::scale(
                       ctx, core::permute(ctx, f32(ctx, {5, 37, 3, 1}), {1, 0, 2, 3}), 3.0f)};
                 }});
  out.push_back(
      {"silu_permuted",
       [](Context& ctx, Inputs&) {
         return std::vector{core::silu(ctx, core::transpose(ctx, f32(ctx, {5, 37, 1, 1})))};
       },
       kFewUlps});
  out.push_back({"gelu_permuted_small", [](Context& ctx, Inputs& in) {
                   // Values near 0 and f16 subnormals go through the table too.
                   Tensor* a = f32(ctx, {5, 37, 1, 1});
                   std::vector<float> v = uniform(185, -1.0f, 1.0f, 25);
                   for (size_t i = 0; i < v.size(); i += 3) v[i] *= 1e-5f;
                   in.f32[a] = v;
                   return std::vector{core::gelu(ctx, core::transpose(ctx, a))};
                 }});
  out.push_back(
      {"tanh_permuted", [](Context& ctx, Inputs&) {
         return std::vector{core::tanh(ctx, core::transpose(ctx, f32(ctx, {5, 37, 1, 1})))};
       }});
  out.push_back({"swiglu_noncontiguous",
                 [](Context& ctx, Inputs&) {
                   Tensor* g = core::transpose(ctx, f32(ctx, {5, 37, 1, 1}));
                   Tensor* u = row_window(ctx, f32(ctx, {37, 9, 1, 1}), 2, 5);
                   return std::vector{core::swiglu(ctx, g, u)};
                 },
                 kFewUlps});
  out.push_back({"rms_norm_permuted",
                 [](Context& ctx, Inputs&) {
                   return std::vector{core::rms_norm(
                       ctx, core::permute(ctx, f32(ctx, {5, 64, 3, 1}), {1, 0, 2, 3}), 1e-5f)};
                 },
                 kFewUlps});
}

void rope_cases(std::vector<Case>& out) {
  for (core::RopeMode mode : {core::RopeMode::kNormal, core::RopeMode::kNeox}) {
    const std::string p =
        std::string("rope_") + (mode == core::RopeMode::kNeox ? "neox_" : "normal_");
    for (int32_t n_dims : {64, 32}) {
      for (float freq_scale : {1.0f, 0.25f}) {
        const core::RopeParams rp{n_dims, mode, 10000.0f, freq_scale};
        out.push_back(
            {p + "dims" + std::to_string(n_dims) + (freq_scale == 1.0f ? "" : "_scaled"),
             [rp](Context& ctx, Inputs& in) {
               Tensor* pos = ids_leaf(ctx, in, random_ints(5, 0, 100000, 31), {5, 1, 1, 1});
               return std::vector{core::rope(ctx, f32(ctx, {64, 4, 5, 1}), pos, rp)};
             },
             kFewUlps});
      }
    }
    for (int32_t n_dims : {64, 32}) {
      // Llama 3.1's rope_freqs: factors from 1 (high frequencies) to 8 (low ones).
      const core::RopeParams rp{n_dims, mode, 500000.0f, n_dims == 64 ? 1.0f : 0.5f};
      out.push_back({p + "freq_factors_dims" + std::to_string(n_dims),
                     [rp](Context& ctx, Inputs& in) {
                       Tensor* ff = f32(ctx, {rp.n_dims / 2, 1, 1, 1});
                       in.f32[ff] = uniform(rp.n_dims / 2, 1.0f, 8.0f, 32);
                       Tensor* pos = ids_leaf(ctx, in, random_ints(5, 0, 100000, 33), {5, 1, 1, 1});
                       return std::vector{core::rope(ctx, f32(ctx, {64, 4, 5, 1}), pos, rp, ff)};
                     },
                     kFewUlps});
    }
    const core::RopeParams rp{64, mode, 500000.0f, 1.0f};
    out.push_back({p + "fused_qkv_view",
                   [rp](Context& ctx, Inputs& in) {
                     // The K part of a fused [q | k | v] projection: heads 4..7 of 12.
                     Tensor* qkv = f32(ctx, {64, 12, 5, 1});
                     Tensor* k = core::view(ctx, qkv, {64, 4, 5, 1}, qkv->nb, 4 * qkv->nb[1]);
                     Tensor* pos = ids_leaf(ctx, in, {0, 1, 2, 3, 4}, {5, 1, 1, 1});
                     return std::vector{core::rope(ctx, k, pos, rp)};
                   },
                   kFewUlps});
    out.push_back({p + "permuted",
                   [rp](Context& ctx, Inputs& in) {
                     Tensor* a = core::permute(ctx, f32(ctx, {4, 64, 3, 1}), {1, 0, 2, 3});
                     Tensor* pos = ids_leaf(ctx, in, {7, 4096, 123456}, {3, 1, 1, 1});
                     return std::vector{core::rope(ctx, a, pos, rp)};
                   },
                   kFewUlps});
  }
}

// A causal mask [nk, nq]: query i (at position nk - nq + i) sees keys up to its own position.

void softmax_cases(std::vector<Case>& out) {
  out.push_back({"soft_max_plain",
                 [](Context& ctx, Inputs&) {
                   return std::vector{core::soft_max(ctx, f32(ctx, {37, 6, 3, 1}), nullptr, 1.0f)};
                 },
                 kFewUlps});
  out.push_back({"soft_max_causal_mask",
                 [](Context& ctx, Inputs& in) {
                   Tensor* mask = f32(ctx, {37, 6, 1, 1});
                   in.f32[mask] = causal_mask(37, 6, 37, 6);
                   return std::vector{core::soft_max(ctx, f32(ctx, {37, 6, 3, 2}), mask, 0.125f)};
                 },
                 kFewUlps});
  out.push_back({"soft_max_wide_mask_fully_masked_row",
                 [](Context& ctx, Inputs& in) {
                   // The mask is wider and taller than needed; row 0 is masked entirely.
                   Tensor* mask = f32(ctx, {20, 6, 1, 1});
                   std::vector<float> m = uniform(120, -2.0f, 2.0f, 41);
                   for (int i = 0; i < 20; ++i) m[static_cast<size_t>(i)] = -INFINITY;
                   m[25] = -INFINITY;
                   in.f32[mask] = m;
                   return std::vector{core::soft_max(ctx, f32(ctx, {17, 4, 2, 1}), mask, 2.0f)};
                 },
                 kFewUlps});
  out.push_back({"soft_max_permuted",
                 [](Context& ctx, Inputs&) {
                   Tensor* a = core::permute(ctx, f32(ctx, {6, 37, 3, 1}), {1, 0, 2, 3});
                   return std::vector{core::soft_max(ctx, a, nullptr, 0.5f)};
                 },
                 kFewUlps});
  out.push_back(
      {"soft_max_long",
       [](Context& ctx, Inputs&) {
         return std::vector{core::soft_max(ctx, f32(ctx, {4096, 2, 1, 1}), nullptr, 1.0f)};
       },
       kFewUlps});
}

void reduce_cases(std::vector<Case>& out) {
  out.push_back({"sum_rows_plain", [](Context& ctx, Inputs&) {
                   return std::vector{core::sum_rows(ctx, f32(ctx, {37, 5, 3, 2}))};
                 }});
  out.push_back({"sum_rows_long", [](Context& ctx, Inputs&) {
                   return std::vector{core::sum_rows(ctx, f32(ctx, {4096, 3, 1, 1}))};
                 }});
  out.push_back(
      {"sum_rows_transposed", [](Context& ctx, Inputs&) {
         return std::vector{core::sum_rows(ctx, core::transpose(ctx, f32(ctx, {5, 37, 1, 1})))};
       }});
  for (int64_t k : {1, 2, 8, 40}) {
    out.push_back({"top_k_" + std::to_string(k), [k](Context& ctx, Inputs&) {
                     return std::vector{core::top_k(ctx, f32(ctx, {40, 6, 2, 1}), k)};
                   }});
  }
  out.push_back({"top_k_ties_and_nans", [](Context& ctx, Inputs& in) {
                   Tensor* a = f32(ctx, {30, 4, 1, 1});
                   std::vector<float> v = uniform(120, 0.0f, 4.0f, 52);
                   for (float& x : v) x = std::floor(x);  // many ties per row
                   v[3] = NAN;
                   v[40] = NAN;
                   v[41] = -INFINITY;
                   v[95] = INFINITY;
                   in.f32[a] = v;
                   return std::vector{core::top_k(ctx, a, 12)};
                 }});
  out.push_back(
      {"top_k_transposed", [](Context& ctx, Inputs&) {
         return std::vector{core::top_k(ctx, core::transpose(ctx, f32(ctx, {5, 37, 1, 1})), 4)};
       }});
}

void argmax_cases(std::vector<Case>& out) {
  out.push_back({"argmax_plain", [](Context& ctx, Inputs&) {
                   return std::vector{core::argmax(ctx, f32(ctx, {37, 5, 2, 1}))};
                 }});
  out.push_back({"argmax_long", [](Context& ctx, Inputs&) {
                   return std::vector{core::argmax(ctx, f32(ctx, {1000, 3, 1, 1}))};
                 }});
  out.push_back({"argmax_ties_first_wins", [](Context& ctx, Inputs& in) {
                   Tensor* a = f32(ctx, {40, 4, 1, 1});
                   std::vector<float> v = uniform(160, 0.0f, 4.0f, 51);
                   for (float& x : v) x = std::floor(x);  // many equal maxima per row
                   in.f32[a] = v;
                   return std::vector{core::argmax(ctx, a)};
                 }});
  out.push_back(
      {"argmax_transposed", [](Context& ctx, Inputs&) {
         return std::vector{core::argmax(ctx, core::transpose(ctx, f32(ctx, {5, 37, 1, 1})))};
       }});
}

}  // namespace

void math_cases(std::vector<Case>& out) {
  elementwise_cases(out);
  rope_cases(out);
  softmax_cases(out);
  argmax_cases(out);
  reduce_cases(out);
}

}  // namespace strata::cpu::test
