// End-to-end checks against llama.cpp's outputs for the models in ../shared.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <span>

#include "cpu/kernel_sets.h"
#include "decode_all.h"
#include "devices/host_device.h"
#include "engine/session.h"
#include "golden.h"
#include "model/model.h"

namespace strata::engine {
namespace {

using testing::Golden;
using testing::load_golden;
using testing::rms_diff;

struct Loaded {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<Session> session;
};

Loaded load(const std::string& path, SessionParams sp = {}) {
  Loaded l;
  auto m = model::Model::load(path, devices::host_device().buffer_type());
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return l;
  l.model = std::move(m).value();
  if (sp.n_ctx == 0) sp.n_ctx = 256;
  auto s = Session::create(*l.model, devices::host_device(), sp);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) l.session = std::move(s).value();
  return l;
}

// Logits of every prompt position, [n_prompt][n_vocab].
std::vector<float> prompt_logits(Session& s, std::span<const int32_t> tokens) {
  s.reset();
  return testing::decode_all(s, tokens);
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

class GoldenF32 : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// F32 weights: every prompt position equal to llama.cpp's, bit for bit (the issue asks for 1e-3).
// Our CPU kernels sum in its order (see cpu/kernels/dot_float.cpp); stories260K's FFN width (172)
// takes its vector-dot order, with the remainder split as its compiled loop splits it. Both
// engines round K, V, Q and the attention probabilities to f16 (llama.cpp's default KV cache),
// so a last-bit difference anywhere flips some f16 rounding and shows on the 129-token prompt as
// ~1e-3; equality is the check that catches it.
TEST_P(GoldenF32, PromptLogitsAreBitIdentical) {
  const auto& [name, prompt] = GetParam();
  auto g = load_golden(name, prompt);
  if (!g) GTEST_SKIP() << "golden files for " << name << " not found";
  Loaded l = load(g->model_path);
  ASSERT_TRUE(l.session);
  EXPECT_EQ(l.model->tokenizer().encode(g->prompt, true), g->prompt_tokens);
  auto logits = prompt_logits(*l.session, g->prompt_tokens);
  ASSERT_EQ(logits.size(), g->logits.size());
  if (!cpu::kernel_set().llama_order) {
    // The scalar kernel set sums in its own order: the f16 roundings then differ here and
    // there (measured rms up to 7e-5).
    EXPECT_LT(rms_diff(logits, g->logits), 5e-4) << "kernel set " << cpu::kernel_set().name;
    return;
  }
  EXPECT_TRUE(logits == g->logits) << "max abs difference " << max_abs_diff(logits, g->logits)
                                   << ", rms " << rms_diff(logits, g->logits);
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenF32,
                         ::testing::Values(std::make_tuple("stories260K", "once"),
                                           std::make_tuple("stories260K", "park"),
                                           std::make_tuple("synth256-f32", "once"),
                                           std::make_tuple("synth256-f32", "park")));

// A trained F32 model must reproduce llama.cpp's greedy continuation token for token.
TEST(GoldenGreedy, Stories260KContinuationIsTokenExact) {
  for (const char* prompt : {"once", "park"}) {
    auto g = load_golden("stories260K", prompt);
    if (!g) GTEST_SKIP() << "golden files not found";
    Loaded l = load(g->model_path, {.n_ctx = 512});
    ASSERT_TRUE(l.session);
    EXPECT_EQ(testing::greedy_tokens(*l.session, g->prompt, g->greedy_tokens.size()),
              g->greedy_tokens)
        << prompt;
  }
}

// Quantized and half-precision files: the criterion, an RMS difference from llama.cpp's
// run of the same file below a tenth of that file's own quantization error (its RMS difference
// from the F32 run). Where we sum in llama.cpp's order for every op the logits are equal bit for
// bit (f16, bf16, q8_0 with the plain kernels). q4_0 and q4_k weights llama.cpp repacks into
// interleaved layouts with their own summation order; those land within the criterion
// (measured 0.03 and 0.075). For q4_0 that order is each block's exact integer dot product
// times d_w * d_a, added in block order, which the packed q4_0 kernel (one weight row per
// lane) follows too: where a set has it, the q4_0 logits are equal bit for bit as well.
//
// The packed q8_0 kernel sums q8_0 in that order too (llama.cpp's June 2025 build, which made
// the golden files, adds each block's eight partial sums in eight float lanes instead, which
// costs three float instructions per vpdpbusd and halves prefill). An order that differs in
// the last bit flips some of the next layer's int8 activation roundings, and for q8_0, whose
// own quantization error is small, those flips weigh: it lands at 0.44 of the quantization
// error, held to the bound of the sets that sum in another order below.
struct TypedCase {
  std::string name;
  bool exact;
};

class GoldenTyped : public ::testing::TestWithParam<TypedCase> {};

TEST_P(GoldenTyped, WithinATenthOfTheQuantizationError) {
  const TypedCase& c = GetParam();
  auto g = load_golden(c.name, "park");
  auto ref = load_golden("synth256-f32", "park");
  if (!g || !ref) GTEST_SKIP() << "golden files for " << c.name << " not found";
  Loaded l = load(g->model_path);
  ASSERT_TRUE(l.session);
  auto logits = prompt_logits(*l.session, g->prompt_tokens);
  ASSERT_EQ(logits.size(), g->logits.size());
  const double theirs = rms_diff(g->logits, ref->logits);
  const double between = rms_diff(logits, g->logits);
  RecordProperty("rms_vs_same_type", std::to_string(between));
  RecordProperty("ratio", std::to_string(between / theirs));
  // Our own quantization error equals llama.cpp's (the format is read right).
  EXPECT_NEAR(rms_diff(logits, ref->logits), theirs, 0.03 * theirs);
  // The golden files come from llama.cpp's AVX-512 build, which takes bf16 products in
  // vdpbf16ps pairs. A kernel set without AVX-512 BF16 (bf16), or the scalar set (any type),
  // sums in another order and so rounds the f16 KV cache differently in places: it is held to
  // the same quantization error and to a looser distance from llama.cpp's run (measured at most
  // 0.46 of the quantization error, against 0.1 for the sets that sum in its order).
  const cpu::KernelSet& ks = cpu::kernel_set();
  const bool packed_q8_0 =
      c.name == "synth256-q8_0" && ks.packed_dot(core::Type::kQ8_0, 256) != nullptr;
  const bool same_order =
      ks.llama_order && (c.name != "synth256-bf16" || ks.bf16_pairs) && !packed_q8_0;
  EXPECT_LT(between, (same_order ? 0.1 : 0.6) * theirs) << "kernel set " << ks.name;
  const bool exact =
      c.exact || (c.name == "synth256-q4_0" && ks.packed_dot(core::Type::kQ4_0, 256) != nullptr);
  if (exact && same_order) {
    EXPECT_EQ(logits, g->logits);
  }
}

std::string typed_case_name(const ::testing::TestParamInfo<TypedCase>& p) {
  return p.param.name.substr(p.param.name.find('-') + 1);
}

INSTANTIATE_TEST_SUITE_P(
    Types, GoldenTyped,
    ::testing::Values(TypedCase{"synth256-f16", true}, TypedCase{"synth256-bf16", true},
                      TypedCase{"synth256-q8_0", true}, TypedCase{"synth256-q4_0", false},
                      TypedCase{"synth256-q4_k", false}, TypedCase{"synth256-q6_k", true},
                      TypedCase{"synth256-q4_k_m", false}),
    typed_case_name);

}  // namespace
}  // namespace strata::engine
