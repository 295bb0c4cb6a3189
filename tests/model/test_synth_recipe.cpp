// Which type each tensor of a synthetic model gets: pure formats, llama.cpp's K-quant mixes,
// and the fallbacks for rows a type's block does not divide. Pure planning: no quantizer needed.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/synth/recipe.h"
#include "model/synth/synth.h"
#include "model/synth/tensors.h"

namespace strata::model {
namespace {

using core::Type;

Hparams shape(int64_t n_embd, int64_t n_ff, int64_t n_layer) {
  Hparams hp;
  hp.n_embd = n_embd;
  hp.n_ff = n_ff;
  hp.n_layer = n_layer;
  hp.n_head = 4;
  hp.n_head_kv = 2;
  hp.n_vocab = 512;
  hp.n_ctx_train = 128;
  hp.n_rot = n_embd / 4;
  return hp;
}

// Type of every tensor by name.
std::map<std::string, Type> types_of(const Hparams& hp, const std::string& format) {
  std::map<std::string, Type> m;
  for (const SynthTensor& t : plan_tensors(hp, *find_file_type(format))) m[t.name] = t.type;
  return m;
}

std::string blk(int64_t il, const char* name) {
  return "blk." + std::to_string(il) + "." + name + ".weight";
}

// The layers whose type differs from `base` for tensor `name`, by type.
std::set<int64_t> layers_with(const std::map<std::string, Type>& m, int64_t n_layer,
                              const char* name, Type t) {
  std::set<int64_t> layers;
  for (int64_t il = 0; il < n_layer; ++il) {
    if (m.at(blk(il, name)) == t) layers.insert(il);
  }
  return layers;
}

TEST(SynthRecipe, FormatNamesAndFileTypeIds) {
  const std::pair<const char*, uint32_t> ids[] = {
      {"f32", 0},     {"f16", 1},     {"q4_0", 2},    {"q4_1", 3},    {"q8_0", 7},
      {"q5_0", 8},    {"q5_1", 9},    {"q2_k", 10},   {"q3_k_m", 12}, {"q4_k_s", 14},
      {"q4_k_m", 15}, {"q5_k_s", 16}, {"q5_k_m", 17}, {"q6_k", 18},   {"bf16", 32},
  };
  for (const auto& [name, id] : ids) {
    auto ft = find_file_type(name);
    ASSERT_TRUE(ft.has_value()) << name;
    EXPECT_EQ(ft->ftype, id) << name;
  }
  EXPECT_FALSE(find_file_type("q4_k_x").has_value());
  EXPECT_FALSE(find_file_type("q8_k").has_value());  // an activation type, not a weight format
}

TEST(SynthRecipe, PureFormatsStoreEveryMatrixInTheirType) {
  for (const char* format : {"f16", "q8_0", "q4_0", "q4_k"}) {
    const Type base = find_file_type(format)->base;
    for (const auto& [name, type] : types_of(shape(256, 512, 4), format)) {
      EXPECT_EQ(type, name.find("norm") != std::string::npos ? Type::kF32 : base)
          << format << " " << name;
    }
  }
}

TEST(SynthRecipe, Q4KMGivesMoreBitsToAttnVAndFfnDownOnLlamaCppsLayers) {
  // 8 layers: the first eighth (0), the last eighth (7), and every third from n/8 on (3, 6).
  const auto m = types_of(shape(256, 512, 8), "q4_k_m");
  const std::set<int64_t> more = {0, 3, 6, 7};
  EXPECT_EQ(layers_with(m, 8, "attn_v", Type::kQ6_K), more);
  EXPECT_EQ(layers_with(m, 8, "ffn_down", Type::kQ6_K), more);
  EXPECT_EQ(layers_with(m, 8, "attn_v", Type::kQ4_K).size(), 4u);
  for (const char* name : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"}) {
    EXPECT_EQ(layers_with(m, 8, name, Type::kQ4_K).size(), 8u) << name;
  }
  EXPECT_EQ(layers_with(m, 8, "attn_norm", Type::kF32).size(), 8u);
  EXPECT_EQ(m.at("output.weight"), Type::kQ6_K);
  EXPECT_EQ(m.at("token_embd.weight"), Type::kQ4_K);
  EXPECT_EQ(m.at("output_norm.weight"), Type::kF32);
}

TEST(SynthRecipe, Q4KMOnTinyLlamaMatchesLlamaCpp) {
  // 22 layers: n/8 = 2, 7n/8 = 19, so 0-1, 19-21, and 4, 7, 10, 13, 16.
  Hparams hp = *synth_preset("tinyllama-1.1b");
  hp.n_rot = hp.head_dim();
  const auto m = types_of(hp, "q4_k_m");
  const std::set<int64_t> more = {0, 1, 4, 7, 10, 13, 16, 19, 20, 21};
  EXPECT_EQ(layers_with(m, 22, "attn_v", Type::kQ6_K), more);
  EXPECT_EQ(layers_with(m, 22, "ffn_down", Type::kQ6_K), more);
  EXPECT_EQ(m.at("output.weight"), Type::kQ6_K);
}

TEST(SynthRecipe, Q5KMAndQ4KSAndQ3KM) {
  const auto q5 = types_of(shape(256, 512, 8), "q5_k_m");
  EXPECT_EQ(layers_with(q5, 8, "attn_v", Type::kQ6_K), (std::set<int64_t>{0, 3, 6, 7}));
  EXPECT_EQ(layers_with(q5, 8, "attn_q", Type::kQ5_K).size(), 8u);

  const auto q4s = types_of(shape(256, 512, 16), "q4_k_s");
  EXPECT_EQ(layers_with(q4s, 16, "attn_v", Type::kQ5_K), (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(layers_with(q4s, 16, "ffn_down", Type::kQ5_K), (std::set<int64_t>{0, 1}));
  EXPECT_EQ(q4s.at("output.weight"), Type::kQ6_K);
  EXPECT_EQ(q4s.at("blk.5.attn_v.weight"), Type::kQ4_K);

  const auto q3m = types_of(shape(256, 512, 16), "q3_k_m");
  EXPECT_EQ(layers_with(q3m, 16, "attn_v", Type::kQ5_K), (std::set<int64_t>{0, 1}));
  EXPECT_EQ(layers_with(q3m, 16, "attn_v", Type::kQ4_K).size(), 14u);
  EXPECT_EQ(layers_with(q3m, 16, "ffn_down", Type::kQ5_K), (std::set<int64_t>{0}));
  EXPECT_EQ(layers_with(q3m, 16, "ffn_down", Type::kQ4_K).size(), 15u);
  EXPECT_EQ(layers_with(q3m, 16, "attn_output", Type::kQ4_K).size(), 16u);
  EXPECT_EQ(layers_with(q3m, 16, "ffn_up", Type::kQ3_K).size(), 16u);

  const auto q5s = types_of(shape(256, 512, 4), "q5_k_s");
  EXPECT_EQ(q5s.at("output.weight"), Type::kQ6_K);
  EXPECT_EQ(q5s.at("blk.0.attn_v.weight"), Type::kQ5_K);
}

TEST(SynthRecipe, RowsTheBlockDoesNotDivideFallBackAsLlamaCppDoes) {
  // Rows of 64 and 128: no 256-element super-block fits.
  const auto m = types_of(shape(64, 128, 8), "q4_k_m");
  EXPECT_EQ(m.at("blk.1.attn_q.weight"), Type::kQ5_0);  // Q4_K -> Q5_0
  EXPECT_EQ(m.at("blk.0.attn_v.weight"), Type::kQ8_0);  // Q6_K -> Q8_0
  EXPECT_EQ(m.at("blk.0.ffn_down.weight"), Type::kQ8_0);
  EXPECT_EQ(m.at("output.weight"), Type::kQ8_0);  // llama.cpp's rule for the output
  EXPECT_EQ(m.at("token_embd.weight"), Type::kQ5_0);
  EXPECT_EQ(types_of(shape(64, 128, 2), "q5_k").at("blk.0.attn_q.weight"), Type::kQ5_1);
  EXPECT_EQ(types_of(shape(64, 128, 2), "q2_k").at("blk.0.attn_q.weight"), Type::kQ4_0);
  EXPECT_EQ(types_of(shape(64, 128, 2), "q6_k").at("blk.0.attn_q.weight"), Type::kQ8_0);
  // Rows of 48 and 80 fit no quantized block at all.
  const auto odd = types_of(shape(48, 80, 2), "q4_0");
  EXPECT_EQ(odd.at("blk.0.attn_q.weight"), Type::kF16);
  EXPECT_EQ(odd.at("blk.0.ffn_down.weight"), Type::kF16);
  EXPECT_EQ(odd.at("blk.0.attn_norm.weight"), Type::kF32);
}

TEST(SynthRecipe, ShapesAreWhatTheLoaderExpects) {
  const std::vector<SynthTensor> plan = plan_tensors(shape(256, 512, 3), *find_file_type("f16"));
  ASSERT_EQ(plan.size(), 3u * 9 + 3);
  EXPECT_EQ(plan.front().name, "token_embd.weight");
  EXPECT_EQ(plan.front().ne, (std::vector<int64_t>{256, 512}));
  EXPECT_EQ(plan.back().name, "output.weight");
  for (const SynthTensor& t : plan) {
    const std::map<std::string, std::vector<int64_t>> expected = {
        {"blk.2.attn_k.weight", {256, 128}},
        {"blk.2.ffn_down.weight", {512, 256}},
        {"blk.2.ffn_gate.weight", {256, 512}},
        {"blk.0.ffn_norm.weight", {256}},
    };
    const auto it = expected.find(t.name);
    if (it != expected.end()) {
      EXPECT_EQ(t.ne, it->second) << t.name;
    }
  }
}

}  // namespace
}  // namespace strata::model
