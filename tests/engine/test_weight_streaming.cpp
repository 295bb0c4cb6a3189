// Weight streaming and banded prefill against the fully resident run: bit-identical logits for
// every model type, with 2 and 3 weight slots, token-major and banded prefill (1, 2 and n_layer
// bands), on one partition, on two (-sm layer), under --mem-budget and with KV paging; the
// weight bytes a prompt reads; errors of the home reach the caller as error values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "decode_all.h"
#include "engine/open.h"
#include "gguf/file.h"
#include "golden.h"
#include "meta/meta_buffer.h"
#include "model/arch/hparams.h"

namespace strata::engine {
namespace {

SessionParams session_params(int64_t ubatch = 16) {
  SessionParams sp;
  sp.n_ctx = 256;
  sp.n_ubatch = ubatch;
  sp.n_threads = 2;
  return sp;
}

// One partition holding every layer and the output, its layers streamed through `slots`.
OpenParams streamed(int slots, PrefillOrder prefill, int64_t band_layers) {
  OpenParams p;
  p.partitions = 1;
  p.n_gpu_layers = 99;
  p.stream_slots = slots;
  p.prefill = prefill;
  p.band_layers = band_layers;
  return p;
}

Opened open_or_fail(const std::string& path, const OpenParams& p, const SessionParams& sp) {
  auto r = open(path, p, sp);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::vector<float> plain_logits(const testing::Golden& g) {
  Opened plain = open_or_fail(g.model_path, {}, session_params());
  if (!plain.session) return {};
  return testing::prompt_and_steps(*plain.session, g.prompt_tokens);
}

// (model, slots, bands): bands 0 is token-major prefill, else the number of bands.
class WeightStreamingModels : public ::testing::TestWithParam<std::tuple<std::string, int, int>> {};

TEST_P(WeightStreamingModels, LogitsEqualTheResidentRunBitForBit) {
  const auto& [model_name, slots, bands] = GetParam();
  auto g = testing::load_golden(model_name, "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  const std::vector<float> want = plain_logits(*g);
  auto file = gguf::File::open(g->model_path);
  ASSERT_TRUE(file.ok());
  auto hp = model::read_hparams(*file);
  ASSERT_TRUE(hp.ok());
  const int64_t n_layer = hp->n_layer;
  const int64_t band_layers = bands == 0 ? 0 : (n_layer + bands - 1) / bands;
  Opened s = open_or_fail(
      g->model_path,
      streamed(slots, bands == 0 ? PrefillOrder::kToken : PrefillOrder::kBanded, band_layers),
      session_params());
  ASSERT_TRUE(s.session);
  const model::WeightStream& ws = s.model->weights().stream;
  ASSERT_EQ(static_cast<int64_t>(ws.layers.size()), n_layer);
  EXPECT_EQ(ws.n_slots, std::min<int>(slots, static_cast<int>(n_layer)));
  EXPECT_EQ(s.session->band_layers(), band_layers);
  EXPECT_EQ(testing::prompt_and_steps(*s.session, g->prompt_tokens), want);
  EXPECT_GT(s.session->weight_stats().bytes_read, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    All, WeightStreamingModels,
    ::testing::Combine(::testing::Values("stories260K", "synth256-f32", "synth256-f16",
                                         "synth256-bf16", "synth256-q8_0", "synth256-q4_0",
                                         "synth256-q4_k", "synth256-q4_k_m", "synth256-q6_k"),
                       ::testing::Values(2, 3), ::testing::Values(0, 1, 2, 99)),
    [](const auto& param_info) {
      const int bands = std::get<2>(param_info.param);
      std::string n = std::get<0>(param_info.param) + "_" +
                      std::to_string(std::get<1>(param_info.param)) + "slots_" +
                      (bands == 0    ? std::string("token")
                       : bands == 99 ? std::string("banded_per_layer")
                                     : "banded_" + std::to_string(bands));
      for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return n;
    });

TEST(WeightStreaming, BandedPrefillReadsTheWeightsOncePerPrompt) {
  auto g = testing::load_golden("stories260K", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  ASSERT_GE(g->prompt_tokens.size(), 48u) << "the prompt needs several micro-batches";
  const auto micro_batches = static_cast<double>((g->prompt_tokens.size() + 15) / 16);
  double banded_bytes = 0, token_bytes = 0, model_bytes = 0;
  for (PrefillOrder order : {PrefillOrder::kBanded, PrefillOrder::kToken}) {
    Opened s = open_or_fail(g->model_path, streamed(2, order, 0), session_params());
    ASSERT_TRUE(s.session);
    model_bytes = static_cast<double>(s.model->weights().stream.bytes());
    ASSERT_TRUE(s.session->decode(g->prompt_tokens).ok());
    const auto read = static_cast<double>(s.session->weight_stats().bytes_read);
    (order == PrefillOrder::kBanded ? banded_bytes : token_bytes) = read;
  }
  EXPECT_LE(banded_bytes, 1.1 * model_bytes);
  EXPECT_GE(banded_bytes, model_bytes);
  // Two slots for five layers: token-major reads every layer for every micro-batch.
  EXPECT_GE(token_bytes, 0.9 * micro_batches * model_bytes);
}

TEST(WeightStreaming, EqualsTheResidentRunOnEveryLayout) {
  auto g = testing::load_golden("stories260K", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  const std::vector<float> want = plain_logits(*g);
  struct Case {
    const char* name;
    OpenParams p;
  };
  std::vector<Case> cases;
  {
    OpenParams p;  // two partitions, layers split, each streaming its own
    p.partitions = 2;
    p.n_gpu_layers = 99;
    p.stream_slots = 2;
    cases.push_back({"layer split", p});
  }
  {
    OpenParams p = streamed(2, PrefillOrder::kAuto, 0);  // KV on the host: token-major
    p.kv_offload = false;
    cases.push_back({"no KV offload", p});
  }
  {
    OpenParams p = streamed(2, PrefillOrder::kBanded, 2);  // the output stays on the host
    p.n_gpu_layers = 5;
    cases.push_back({"output on the host", p});
  }
  for (int64_t band : {1, 2, 3}) {
    OpenParams p = streamed(2, PrefillOrder::kBanded, band);  // layers 0-1 stay on the host
    p.n_gpu_layers = 3;
    cases.push_back({"partial offload", p});
    OpenParams split = streamed(2, PrefillOrder::kBanded, band);  // bands across two devices
    split.partitions = 2;
    split.tensor_split = {2, 3};
    cases.push_back({"layer split, banded", split});
    OpenParams kv = split;
    kv.kv_paging.resident_fraction = 0.25;
    cases.push_back({"layer split, banded, KV paging", kv});
    OpenParams three = streamed(2, PrefillOrder::kBanded, band);
    three.partitions = 3;
    three.n_gpu_layers = 4;
    cases.push_back({"three devices, output on the host", three});
  }
  for (PrefillOrder order : {PrefillOrder::kToken, PrefillOrder::kBanded}) {
    OpenParams p = streamed(2, order, 1);  // with KV paging
    p.kv_paging.resident_fraction = 0.5;
    cases.push_back({order == PrefillOrder::kToken ? "kv paging" : "kv paging, banded", p});
  }
  for (double resident : {0.25, 1.0}) {
    OpenParams p;  // banded prefill with KV paging on the host, nothing streamed
    p.prefill = PrefillOrder::kBanded;
    p.band_layers = 2;
    p.kv_paging.resident_fraction = resident;
    cases.push_back({resident < 1 ? "banded, 25% of KV resident" : "banded, KV resident", p});
  }
  {
    OpenParams p;  // banded prefill on the plain host, nothing streamed
    p.prefill = PrefillOrder::kBanded;
    p.band_layers = 2;
    cases.push_back({"banded on the host", p});
  }
  {
    OpenParams p = streamed(2, PrefillOrder::kBanded, 1);  // no pipelining
    p.pipeline = false;
    cases.push_back({"no pipeline", p});
  }
  for (const Case& c : cases) {
    Opened s = open_or_fail(g->model_path, c.p, session_params());
    ASSERT_TRUE(s.session) << c.name;
    EXPECT_EQ(testing::prompt_and_steps(*s.session, g->prompt_tokens), want)
        << c.name << ", " << c.p.band_layers;
  }
}

// Under -sm tensor every member streams its shards: the run equals the resident tensor split
// (whose sums differ from the plain run's by the all-reduce order) bit for bit.
class WeightStreamingTensorSplit : public ::testing::TestWithParam<std::string> {};

TEST_P(WeightStreamingTensorSplit, EqualsTheResidentTensorSplit) {
  struct Case {
    const char* name;
    OpenParams p;
    int slots;
    PrefillOrder prefill;
    int64_t band_layers;
  };
  OpenParams two;
  two.partitions = 2;
  two.n_gpu_layers = 99;
  two.split_mode = SplitMode::kTensor;
  OpenParams uneven = two;
  uneven.partitions = 3;
  uneven.tensor_split = {1, 2, 1};
  OpenParams partial = two;
  partial.n_gpu_layers = 3;
  OpenParams kv = two;
  kv.kv_paging.resident_fraction = 0.25;
  const std::vector<Case> cases = {
      {"two members, token-major", two, 2, PrefillOrder::kToken, 0},
      {"two members, banded per layer", two, 2, PrefillOrder::kBanded, 1},
      {"two members, 3 slots, bands of 2", two, 3, PrefillOrder::kBanded, 2},
      {"three members, 1:2:1", uneven, 2, PrefillOrder::kAuto, 0},
      {"partial offload", partial, 2, PrefillOrder::kBanded, 1},
      {"KV paging", kv, 2, PrefillOrder::kBanded, 2},
  };
  {
    const std::string& model_name = GetParam();
    auto g = testing::load_golden(model_name, "park");
    if (!g) GTEST_SKIP() << "golden files not found";
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      std::vector<float> want;
      {
        Opened resident = open_or_fail(g->model_path, c.p, session_params());
        ASSERT_TRUE(resident.session);
        want = testing::prompt_and_steps(*resident.session, g->prompt_tokens);
      }
      OpenParams p = c.p;
      p.stream_slots = c.slots;
      p.prefill = c.prefill;
      p.band_layers = c.band_layers;
      Opened s = open_or_fail(g->model_path, p, session_params());
      ASSERT_TRUE(s.session);
      const model::Weights& w = s.model->weights();
      ASSERT_FALSE(w.stream.layers.empty());
      // Layers in one slot share the members' memory; the next layer has its own.
      const model::WeightStream::Layer& first = w.stream.layers.front();
      ASSERT_GT(w.stream.layers.size(), static_cast<size_t>(c.slots));
      const core::Tensor* ffn = w.layers[static_cast<size_t>(first.layer)].ffn_down;
      const core::Tensor* same_slot = w.layers[static_cast<size_t>(first.layer + c.slots)].ffn_down;
      const core::Tensor* next = w.layers[static_cast<size_t>(first.layer + 1)].ffn_down;
      const meta::Sharded* shards = meta::shards_of(*ffn);
      ASSERT_NE(shards, nullptr);
      for (size_t d = 0; d < shards->shard.size(); ++d) {
        EXPECT_EQ(meta::shards_of(*same_slot)->shard[d]->data, shards->shard[d]->data);
        EXPECT_NE(meta::shards_of(*next)->shard[d]->data, shards->shard[d]->data);
      }
      EXPECT_EQ(testing::prompt_and_steps(*s.session, g->prompt_tokens), want);
      EXPECT_GE(s.session->weight_stats().bytes_read, w.stream.bytes());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, WeightStreamingTensorSplit,
                         ::testing::Values("stories260K", "synth256-q4_0", "synth256-q4_k",
                                           "synth256-f16"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(WeightStreaming, MemBudgetRunsAModelLargerThanTheBudget) {
  auto g = testing::load_golden("synth256-f32", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  const std::vector<float> want = plain_logits(*g);
  const auto file_bytes = std::filesystem::file_size(g->model_path);
  OpenParams p;
  p.mem_budget = file_bytes * 3 / 4;
  Opened s = open_or_fail(g->model_path, p, session_params());
  ASSERT_TRUE(s.session);
  const model::WeightStream& ws = s.model->weights().stream;
  EXPECT_FALSE(ws.layers.empty()) << "the weights do not fit: they stream";
  EXPECT_GT(s.session->band_layers(), 0) << "prompts prefill banded by default";
  EXPECT_EQ(testing::prompt_and_steps(*s.session, g->prompt_tokens), want);
  // Without streaming the same budget is a clear out-of-memory error.
  OpenParams no_stream;
  no_stream.partitions = 1;
  no_stream.device_mem = p.mem_budget;
  no_stream.n_gpu_layers = 99;
  auto r = open(g->model_path, no_stream, session_params());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfMemory) << r.status().message();
}

TEST(WeightStreaming, BadCombinationsAreClearErrors) {
  auto g = testing::load_golden("stories260K", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  auto expect_invalid = [&](OpenParams p, const char* says) {
    auto r = open(g->model_path, p, session_params());
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  OpenParams budget_and_parts;
  budget_and_parts.mem_budget = 1 << 20;
  budget_and_parts.partitions = 2;
  expect_invalid(budget_and_parts, "--mem-budget");
  OpenParams no_kv_offload = streamed(2, PrefillOrder::kBanded, 1);
  no_kv_offload.kv_offload = false;
  expect_invalid(no_kv_offload, "--no-kv-offload");
  OpenParams one_slot = streamed(1, PrefillOrder::kAuto, 0);
  expect_invalid(one_slot, "--stream-slots");
}

TEST(WeightStreaming, OneSessionAtATimeStreamsAModel) {
  auto g = testing::load_golden("stories260K", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  auto m = open_model(g->model_path, streamed(2, PrefillOrder::kAuto, 0));
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto a = open_session(*m, session_params());
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = open_session(*m, session_params());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("one session at a time"), std::string::npos);
  a->reset();
  auto c = open_session(*m, session_params());
  EXPECT_TRUE(c.ok()) << "the slots are free again once the first session is gone";
}

TEST(WeightStreaming, AModelFileThatShrinksIsAnErrorValueNotAHang) {
  auto g = testing::load_golden("stories260K", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  const std::string copy = std::string(STRATA_TEST_TMPDIR) + "/streamed_shrinking.gguf";
  std::filesystem::copy_file(g->model_path, copy,
                             std::filesystem::copy_options::overwrite_existing);
  {
    Opened s = open_or_fail(copy, streamed(2, PrefillOrder::kAuto, 0), session_params());
    ASSERT_TRUE(s.session);
    ASSERT_TRUE(s.session->decode(g->prompt_tokens).ok());
    const int64_t n_past = s.session->n_past();
    // The last layer's weights (and what follows them) are cut off the file.
    const model::WeightStream::Layer& last = s.model->weights().stream.layers.back();
    ASSERT_EQ(::truncate(copy.c_str(), static_cast<off_t>(last.pieces.front().file_offset)), 0);
    const std::vector<int32_t> one = {261};
    const Status st = s.session->decode(one);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), ErrorCode::kIo);
    EXPECT_NE(st.message().find("ends early"), std::string::npos) << st.message();
    EXPECT_EQ(s.session->n_past(), n_past) << "the failed step is rolled back";
  }
  // Truncated before loading: refused at load with one line.
  auto r = open(copy, streamed(2, PrefillOrder::kAuto, 0), session_params());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  std::filesystem::remove(copy);
}

}  // namespace
}  // namespace strata::engine
