// The C API's failures: a status code and a message for every bad call, never a crash.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "capi_test_util.h"

namespace strata::capi::testing {
namespace {

std::string last_error() {
  return strata_last_error();
}

TEST(CapiErrors, VersionAndNames) {
  EXPECT_STREQ(strata_version(), "0.1.0");
  EXPECT_STREQ(strata_status_name(STRATA_ERR_OUT_OF_RANGE), "STRATA_ERR_OUT_OF_RANGE");
  EXPECT_STREQ(strata_status_name(static_cast<strata_status>(99)), "STRATA_ERR_UNKNOWN");
}

TEST(CapiErrors, MissingFileIsNotFoundOrIo) {
  strata_model* m = reinterpret_cast<strata_model*>(0x1);
  const strata_status st = strata_model_open("/nonexistent/model.gguf", nullptr, &m);
  EXPECT_TRUE(st == STRATA_ERR_NOT_FOUND || st == STRATA_ERR_IO) << strata_status_name(st);
  EXPECT_EQ(m, reinterpret_cast<strata_model*>(0x1)) << "outputs stay untouched on error";
  EXPECT_NE(last_error().find("/nonexistent/model.gguf"), std::string::npos) << last_error();
}

TEST(CapiErrors, NotAGgufFileIsMalformed) {
  strata_model* m = nullptr;
  const std::string path = std::string(STRATA_SHARED_DIR) + "/STYLE.md";
  const strata_status st = strata_model_open(path.c_str(), nullptr, &m);
  EXPECT_NE(st, STRATA_OK);
  EXPECT_EQ(m, nullptr);
  EXPECT_FALSE(last_error().empty());
}

TEST(CapiErrors, NullArguments) {
  strata_model* m = nullptr;
  EXPECT_EQ(strata_model_open(nullptr, nullptr, &m), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "strata_model_open: path is NULL");
  EXPECT_EQ(strata_model_open(stories_path().c_str(), nullptr, nullptr),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_model_params_init(nullptr), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_context_params_init(nullptr), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_sampler_params_init(nullptr), STRATA_ERR_INVALID_ARGUMENT);

  strata_context* c = nullptr;
  EXPECT_EQ(strata_context_create(nullptr, nullptr, &c), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "strata_context_create: model is NULL");
  const int32_t tok = 1;
  EXPECT_EQ(strata_decode(nullptr, &tok, 1, false), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "strata_decode: ctx is NULL");
  const float* logits = nullptr;
  EXPECT_EQ(strata_get_logits(nullptr, -1, &logits, nullptr), STRATA_ERR_INVALID_ARGUMENT);
  size_t n = 0;
  EXPECT_EQ(strata_tokenize(nullptr, "a", 1, true, false, nullptr, 0, &n),
            STRATA_ERR_INVALID_ARGUMENT);
  char buf[8];
  EXPECT_EQ(strata_token_to_piece(nullptr, 1, false, buf, sizeof buf, &n),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_detokenize(nullptr, &tok, 1, false, false, buf, sizeof buf, &n),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_context_reset(nullptr), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_sampler_accept(nullptr, 1), STRATA_ERR_INVALID_ARGUMENT);
  int32_t out = 0;
  EXPECT_EQ(strata_sample(nullptr, nullptr, -1, &out), STRATA_ERR_INVALID_ARGUMENT);
  strata_sampler* s = nullptr;
  EXPECT_EQ(strata_sampler_create(nullptr, &s), STRATA_ERR_INVALID_ARGUMENT);

  EXPECT_EQ(strata_model_n_vocab(nullptr), -1);
  EXPECT_EQ(strata_model_n_ctx_train(nullptr), -1);
  EXPECT_EQ(strata_token_bos(nullptr), -1);
  EXPECT_EQ(strata_token_eos(nullptr), -1);
  EXPECT_FALSE(strata_token_is_eog(nullptr, 0));
  EXPECT_EQ(strata_context_n_ctx(nullptr), -1);
  EXPECT_EQ(strata_context_n_past(nullptr), -1);
  EXPECT_EQ(strata_context_n_outputs(nullptr), -1);
  strata_model_free(nullptr);
  strata_context_free(nullptr);
  strata_sampler_free(nullptr);
}

// Each thread sees its own last error, so concurrent callers cannot read each other's.
TEST(CapiErrors, LastErrorIsPerThread) {
  strata_model* m = nullptr;
  ASSERT_EQ(strata_model_open(nullptr, nullptr, &m), STRATA_ERR_INVALID_ARGUMENT);
  std::string other;
  std::thread t([&] {
    other = strata_last_error();
    EXPECT_EQ(strata_context_reset(nullptr), STRATA_ERR_INVALID_ARGUMENT);
  });
  t.join();
  EXPECT_EQ(other, "");
  EXPECT_EQ(last_error(), "strata_model_open: path is NULL");
}

TEST(CapiErrors, BadModelParams) {
  const auto expect_invalid = [](strata_model_params p, const std::string& message) {
    strata_model* m = nullptr;
    EXPECT_EQ(strata_model_open(stories_path().c_str(), &p, &m), STRATA_ERR_INVALID_ARGUMENT)
        << message;
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(last_error().find(message), std::string::npos) << last_error();
  };
  strata_model_params p;
  ASSERT_EQ(strata_model_params_init(&p), STRATA_OK);
  strata_model_params bad = p;
  bad.n_partitions = 1000;
  expect_invalid(bad, "n_partitions must be in [0, 256]");
  bad = p;
  bad.n_gpu_layers = 4;
  expect_invalid(bad, "-ngl needs devices");
  bad = p;
  bad.n_tensor_split = 2;
  expect_invalid(bad, "tensor_split is NULL");
  bad = p;
  const float zeros[2] = {0.0f, 0.0f};
  bad.n_partitions = 2;
  bad.tensor_split = zeros;
  bad.n_tensor_split = 2;
  expect_invalid(bad, "all zero");
  bad = p;
  const float one_zero[2] = {1.0f, 0.0f};
  bad.n_partitions = 2;
  bad.n_gpu_layers = 99;
  bad.split_mode = STRATA_SPLIT_TENSOR;
  bad.tensor_split = one_zero;
  bad.n_tensor_split = 2;
  expect_invalid(bad, "every device needs a positive, finite proportion");
  bad = p;
  bad.split_mode = static_cast<strata_split_mode>(7);
  expect_invalid(bad, "unknown split_mode 7");
  bad = p;
  bad.devices = "gpu:9";
  expect_invalid(bad, "gpu:9");
  bad = p;
  bad.device_mem_bytes = 1 << 20;
  expect_invalid(bad, "--device-mem needs --partitions N");
}

TEST(CapiErrors, BadContextAndSamplerParams) {
  ModelPtr m = open_stories();
  ASSERT_NE(m, nullptr) << last_error();
  strata_context_params p;
  strata_context_params_init(&p);
  strata_context* c = nullptr;
  strata_context_params bad = p;
  bad.n_batch = 0;
  EXPECT_EQ(strata_context_create(m.get(), &bad, &c), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("n_batch"), std::string::npos);
  bad = p;
  bad.type_v = STRATA_CACHE_Q8_0;
  EXPECT_EQ(strata_context_create(m.get(), &bad, &c), STRATA_ERR_INVALID_ARGUMENT);
  bad = p;
  bad.type_k = static_cast<strata_cache_type>(42);
  EXPECT_EQ(strata_context_create(m.get(), &bad, &c), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("unknown type_k 42"), std::string::npos);
  bad = p;
  // The attention scores of a micro-batch over 16M cells alone take hundreds of gigabytes.
  bad.n_ctx = 1u << 24;
  EXPECT_EQ(strata_context_create(m.get(), &bad, &c), STRATA_ERR_OUT_OF_MEMORY) << last_error();
  EXPECT_EQ(c, nullptr);

  strata_sampler_params sp;
  strata_sampler_params_init(&sp);
  strata_sampler* s = nullptr;
  strata_sampler_params bad_sp = sp;
  bad_sp.top_p = 0.0f;
  EXPECT_EQ(strata_sampler_create(&bad_sp, &s), STRATA_ERR_INVALID_ARGUMENT);
  bad_sp = sp;
  bad_sp.temperature = -1.0f;
  EXPECT_EQ(strata_sampler_create(&bad_sp, &s), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
}

TEST(CapiErrors, TinyBuffersReportTheSizeNeeded) {
  ModelPtr m = open_stories();
  ASSERT_NE(m, nullptr) << last_error();
  const std::string text = "Once upon a time";
  size_t n = 0;
  EXPECT_EQ(strata_tokenize(m.get(), text.data(), text.size(), true, false, nullptr, 0, &n),
            STRATA_ERR_BUFFER_TOO_SMALL);
  ASSERT_GT(n, 1u);
  std::vector<int32_t> tokens(n, -7);
  size_t n2 = 0;
  EXPECT_EQ(
      strata_tokenize(m.get(), text.data(), text.size(), true, false, tokens.data(), n - 1, &n2),
      STRATA_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n2, n);
  EXPECT_EQ(tokens[0], -7) << "nothing is written into a buffer that is too small";
  EXPECT_EQ(strata_tokenize(m.get(), text.data(), text.size(), true, false, tokens.data(), 4, &n2),
            n > 4 ? STRATA_ERR_BUFFER_TOO_SMALL : STRATA_OK);
  EXPECT_EQ(strata_tokenize(m.get(), text.data(), text.size(), true, false, nullptr, 3, &n2),
            STRATA_ERR_INVALID_ARGUMENT);

  ASSERT_EQ(strata_tokenize(m.get(), text.data(), text.size(), false, false, tokens.data(), n, &n2),
            STRATA_OK);
  char buf[4] = {'x', 'x', 'x', 'x'};
  size_t bytes = 0;
  // " Once" or its first piece is longer than the one byte left for text before the NUL.
  EXPECT_EQ(strata_detokenize(m.get(), tokens.data(), n2, false, false, buf, 2, &bytes),
            STRATA_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(bytes, text.size() + 1) << "with the space before the first word";
  EXPECT_EQ(buf[0], 'x');
  EXPECT_EQ(strata_token_to_piece(m.get(), tokens[0], false, buf, 0, &bytes),
            STRATA_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(strata_token_to_piece(m.get(), tokens[0], false, nullptr, 4, &bytes),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_token_to_piece(m.get(), -1, false, buf, sizeof buf, &bytes),
            STRATA_ERR_OUT_OF_RANGE);
  EXPECT_EQ(
      strata_token_to_piece(m.get(), strata_model_n_vocab(m.get()), false, buf, sizeof buf, &bytes),
      STRATA_ERR_OUT_OF_RANGE);
}

}  // namespace
}  // namespace strata::capi::testing
