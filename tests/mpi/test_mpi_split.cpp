// Layer and tensor splits over MPI ranks against the single-process plain run: the logits of a
// prompt and of decode steps, within the bounds test_tensor_split.cpp explains (a layer split
// computes what the plain run does; a tensor split sums partial products in another order).
// Run by ctest under `mpirun -np 2` and `-np 3`; skipped without ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "decode_all.h"
#include "engine/open.h"
#include "golden.h"
#include "mpi/cluster.h"
#include "mpi/transport.h"

namespace strata::engine {
namespace {

struct MpiCase {
  const char* name;
  SplitMode mode;
  int64_t ngl;
  bool kv_offload = true;
  bool skip_rank_0 = false;  ///< only the other ranks' devices
  bool partitions = false;   ///< two partitions of every rank: mpi:R/part:0, mpi:R/part:1
};

std::vector<MpiCase> cases() {
  return {
      {"tensor", SplitMode::kTensor, 99},
      {"tensor_partial_ngl", SplitMode::kTensor, 2},
      {"tensor_no_kv_offload", SplitMode::kTensor, 99, false},
      {"layer", SplitMode::kLayer, 99},
      {"layer_partial_ngl", SplitMode::kLayer, 2},
      {"layer_no_kv_offload", SplitMode::kLayer, 99, false},
      {"layer_other_ranks", SplitMode::kLayer, 99, true, true},
      {"tensor_rank_partitions", SplitMode::kTensor, 99, true, false, true},
      {"layer_rank_partitions", SplitMode::kLayer, 99, true, false, true},
  };
}

std::string rank_devices(const MpiCase& c) {
  std::string out;
  for (int r = c.skip_rank_0 ? 1 : 0; r < mpi::size(); ++r) {
    const std::string rank = "mpi:" + std::to_string(r);
    out += (out.empty() ? "" : ",") + (c.partitions ? rank + "/part:0," + rank + "/part:1" : rank);
  }
  return out;
}

Result<Opened> open_with(const std::string& path, const MpiCase* c, core::Type kv) {
  OpenParams p;
  if (c != nullptr) {
    p.devices = rank_devices(*c);
    p.n_gpu_layers = c->ngl;
    p.split_mode = c->mode;
    p.kv_offload = c->kv_offload;
  }
  SessionParams sp;
  sp.n_ctx = 256;
  sp.n_threads = 2;
  sp.type_k = kv;
  sp.type_v = kv;
  return engine::open(path, p, sp);
}

double relative_rms(const std::vector<float>& got, const std::vector<float>& want) {
  double ref = 0;
  for (float x : want) ref += static_cast<double>(x) * x;
  ref = std::sqrt(ref / static_cast<double>(std::max<size_t>(want.size(), 1)));
  return testing::rms_diff(got, want) / std::max(ref, 1e-30);
}

class MpiSplit : public ::testing::TestWithParam<std::tuple<std::string, MpiCase>> {};

TEST_P(MpiSplit, LogitsMatchThePlainRun) {
  if (!mpi::driving()) GTEST_SKIP() << "not under mpirun with two or more ranks";
  const auto& [model, c] = GetParam();
  if (c.skip_rank_0 && c.mode == SplitMode::kTensor) GTEST_SKIP();
  auto g = testing::load_golden(model, "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  const bool f32 = model == "stories260K";
  const core::Type kv = f32 ? core::Type::kF32 : core::Type::kF16;
  auto plain = open_with(g->model_path, nullptr, kv);
  auto split = open_with(g->model_path, &c, kv);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(split.ok()) << split.status().message();
  if (c.mode == SplitMode::kTensor) {
    ASSERT_EQ(split->layout.devices.size(), 1u);
    EXPECT_EQ(split->layout.devices[0]->kind(), backend::DeviceKind::kMeta);
  } else {
    EXPECT_EQ(split->layout.devices.back()->kind(), backend::DeviceKind::kRemote);
  }
  const auto want = testing::prompt_and_steps(*plain->session, g->prompt_tokens);
  const auto got = testing::prompt_and_steps(*split->session, g->prompt_tokens);
  ASSERT_EQ(got.size(), want.size());
  if (f32) {
    EXPECT_LT(relative_rms(got, want), 1e-5);
    return;
  }
  auto ref = testing::load_golden("synth256-f32", "park");
  ASSERT_TRUE(ref);
  const double quantization_error = testing::rms_diff(g->logits, ref->logits);
  RecordProperty("ratio", std::to_string(testing::rms_diff(got, want) / quantization_error));
  EXPECT_LT(testing::rms_diff(got, want), 0.6 * quantization_error);
}

TEST(MpiSplitText, GreedyTokensMatchThePlainRun) {
  if (!mpi::driving()) GTEST_SKIP() << "not under mpirun with two or more ranks";
  const std::string path = testing::model_path("stories260K.gguf");
  auto plain = open_with(path, nullptr, core::Type::kF16);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const auto want = testing::greedy_tokens(*plain->session, "Once upon a time", 32);
  for (const MpiCase& c : cases()) {
    auto split = open_with(path, &c, core::Type::kF16);
    ASSERT_TRUE(split.ok()) << c.name << ": " << split.status().message();
    EXPECT_EQ(testing::greedy_tokens(*split->session, "Once upon a time", 32), want) << c.name;
  }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<std::string, MpiCase>>& p) {
  return std::get<0>(p.param) + "_" + std::get<1>(p.param).name;
}

INSTANTIATE_TEST_SUITE_P(All, MpiSplit,
                         ::testing::Combine(::testing::Values("stories260K", "synth256-q8_0",
                                                              "synth256-q4_k_m"),
                                            ::testing::ValuesIn(cases())),
                         [](const auto& p) {
                           std::string n = param_name(p);
                           for (char& ch : n) ch = std::isalnum(ch) ? ch : '_';
                           return n;
                         });

}  // namespace
}  // namespace strata::engine
