// KV paging against the fully resident cache: bit-identical logits for every model type, at
// 25%, 50% and 100% resident, with the home in host memory and in a file, on the plain host
// and on partitions; errors of the home reach the caller and leave the session usable.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "decode_all.h"
#include "devices/host_device.h"
#include "engine/kv_home.h"
#include "engine/session.h"
#include "golden.h"
#include "layout_cases.h"

namespace strata::engine {
namespace {

using testing::LayoutCase;

std::string home_path(const std::string& name) {
  return std::string(STRATA_TEST_TMPDIR) + "/kv_home_" + name + ".bin";
}

testing::Opened open_paged(const std::string& path, const LayoutCase& c, double resident,
                           const std::string& home_file, int64_t ubatch = 512) {
  return testing::open_with_layout(
      path, c,
      {.ubatch = ubatch, .kv_paging = {.resident_fraction = resident, .home_file = home_file}});
}

class KvPagingModels : public ::testing::TestWithParam<std::tuple<std::string, double, bool>> {};

TEST_P(KvPagingModels, LogitsEqualTheResidentCacheBitForBit) {
  const auto& [model_name, resident, in_file] = GetParam();
  auto g = testing::load_golden(model_name, "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened plain = testing::open_with_layout(g->model_path, testing::plain_layout());
  const std::string home =
      in_file ? home_path(model_name + std::to_string(static_cast<int>(resident * 100))) : "";
  // Micro-batches of 48: the prompt runs as three jobs, each paging every layer.
  testing::Opened paged = open_paged(g->model_path, testing::plain_layout(), resident, home, 48);
  ASSERT_TRUE(plain.session && paged.session);
  ASSERT_NE(paged.session->kv_paging(), nullptr);
  EXPECT_EQ(testing::prompt_and_steps(*paged.session, g->prompt_tokens),
            testing::prompt_and_steps(*plain.session, g->prompt_tokens));
  const KvPagingStats st = paged.session->kv_paging_stats();
  if (resident < 1.0) {
    EXPECT_GT(st.bytes_in, 0u);
    EXPECT_GT(st.bytes_out, 0u);
  } else {
    EXPECT_EQ(st.bytes_out, 0u) << "fully resident: nothing is ever written back";
  }
  if (in_file) {
    EXPECT_TRUE(std::filesystem::exists(home));
    paged.session.reset();
    EXPECT_FALSE(std::filesystem::exists(home)) << "the home file is removed with the session";
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, KvPagingModels,
    ::testing::Combine(::testing::Values("stories260K", "synth256-f32", "synth256-f16",
                                         "synth256-bf16", "synth256-q8_0", "synth256-q4_0",
                                         "synth256-q4_k", "synth256-q4_k_m", "synth256-q6_k"),
                       ::testing::Values(0.25, 0.5, 1.0), ::testing::Bool()),
    [](const auto& param_info) {
      std::string n = std::get<0>(param_info.param) + "_" +
                      std::to_string(static_cast<int>(std::get<1>(param_info.param) * 100)) +
                      (std::get<2>(param_info.param) ? "_file" : "_memory");
      for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return n;
    });

class KvPagingLayouts : public ::testing::TestWithParam<std::tuple<std::string, LayoutCase>> {};

TEST_P(KvPagingLayouts, LogitsEqualTheResidentCacheOnEveryLayout) {
  const auto& [model_name, layout] = GetParam();
  auto g = testing::load_golden(model_name, "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened plain = testing::open_with_layout(g->model_path, testing::plain_layout());
  testing::Opened paged = open_paged(g->model_path, layout, 0.25, "", 48);
  ASSERT_TRUE(plain.session && paged.session);
  EXPECT_EQ(testing::prompt_and_steps(*paged.session, g->prompt_tokens),
            testing::prompt_and_steps(*plain.session, g->prompt_tokens));
}

INSTANTIATE_TEST_SUITE_P(All, KvPagingLayouts,
                         ::testing::Combine(::testing::Values("stories260K", "synth256-q8_0"),
                                            ::testing::ValuesIn(testing::layout_cases())),
                         [](const auto& param_info) {
                           return testing::case_name(std::get<0>(param_info.param),
                                                     std::get<1>(param_info.param));
                         });

TEST(KvPaging, GreedyContinuationIsTokenExact) {
  for (const char* prompt : {"once", "park"}) {
    auto g = testing::load_golden("stories260K", prompt);
    if (!g) GTEST_SKIP() << "golden files not found";
    for (const LayoutCase& c :
         {testing::plain_layout(), LayoutCase{"uneven", 2, 99, {3, 1}, true}}) {
      testing::Opened r = open_paged(g->model_path, c, 0.25, home_path("greedy"), 16);
      ASSERT_TRUE(r.session);
      EXPECT_EQ(testing::greedy_tokens(*r.session, g->prompt, g->greedy_tokens.size()),
                g->greedy_tokens)
          << prompt << " " << c.name;
    }
  }
}

// A home that forwards to another and fails on demand.
class FlakyHome final : public KvHome {
 public:
  explicit FlakyHome(std::unique_ptr<KvHome> inner) : inner_(std::move(inner)) {}
  Status read(size_t offset, void* dst, size_t bytes) override {
    if (fail) return error(ErrorCode::kIo, "kv home test: read failed");
    return inner_->read(offset, dst, bytes);
  }
  Status write(size_t offset, const void* src, size_t bytes) override {
    if (fail) return error(ErrorCode::kIo, "kv home test: write failed");
    return inner_->write(offset, src, bytes);
  }
  std::string describe() const override { return "flaky " + inner_->describe(); }
  std::atomic<bool> fail{false};

 private:
  std::unique_ptr<KvHome> inner_;
};

TEST(KvPaging, AnErrorOnThePagerThreadReachesTheCallerAndTheSessionStaysUsable) {
  auto g = testing::load_golden("stories260K", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  for (const LayoutCase& c : {testing::plain_layout(), LayoutCase{"two", 2, 99, {}, true}}) {
    testing::Opened plain = testing::open_with_layout(g->model_path, c);
    testing::Opened paged = open_paged(g->model_path, c, 0.25, "");
    ASSERT_TRUE(plain.session && paged.session);
    KvPaging* pg = paged.session->kv_paging();
    auto flaky = std::make_unique<FlakyHome>(std::move(pg->home));
    FlakyHome* home = flaky.get();
    pg->home = std::move(flaky);

    ASSERT_TRUE(paged.session->decode(g->prompt_tokens).ok());
    ASSERT_TRUE(plain.session->decode(g->prompt_tokens).ok());
    const int64_t n_past = paged.session->n_past();
    home->fail = true;
    const std::vector<int32_t> one = {261};
    Status st = paged.session->decode(one);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), ErrorCode::kIo) << st.message();
    EXPECT_NE(st.message().find("kv home test"), std::string::npos) << st.message();
    EXPECT_EQ(paged.session->n_past(), n_past) << "the failed step is rolled back";
    home->fail = false;
    ASSERT_TRUE(paged.session->decode(one).ok());
    ASSERT_TRUE(plain.session->decode(one).ok());
    const auto a = paged.session->logits();
    const auto b = plain.session->logits();
    EXPECT_EQ(std::vector<float>(a.begin(), a.end()), std::vector<float>(b.begin(), b.end()))
        << c.name;
  }
}

TEST(KvPaging, AHomeThatCannotBeCreatedIsAClearError) {
  auto g = testing::load_golden("stories260K", "once");
  if (!g) GTEST_SKIP() << "golden files not found";
  auto m = model::Model::load(g->model_path, devices::host_device().buffer_type());
  ASSERT_TRUE(m.ok());
  for (const std::string& bad :
       {std::string("/nonexistent-dir/kv.bin"), std::string(STRATA_TEST_TMPDIR)}) {
    auto s =
        Session::create(**m, devices::host_device(),
                        {.n_ctx = 64, .kv_paging = {.resident_fraction = 0.5, .home_file = bad}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), ErrorCode::kIo);
    EXPECT_NE(s.status().message().find(bad), std::string::npos) << s.status().message();
  }
  // Resident bytes too small for a single layer.
  auto s = Session::create(**m, devices::host_device(),
                           {.n_ctx = 64, .kv_paging = {.resident_bytes = 16}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("holds no layer"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace strata::engine
