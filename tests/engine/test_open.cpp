// engine::open: layout parameters checked, devices made, the session's size checked before
// the weights are read, and open_model + open_session equal to open.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu/weight_forms.h"
#include "engine/open.h"
#include "golden.h"
#include "memory/huge_page_buffer.h"

namespace strata::engine {
namespace {

const std::string kModel = testing::model_path("stories260K.gguf");

Status open_error(const OpenParams& p, const SessionParams& sp = {.n_ctx = 32}) {
  auto opened = open(kModel, p, sp);
  return opened.status();
}

TEST(Open, BadLayoutParamsAreInvalidArguments) {
  const auto expect = [](const OpenParams& p, const std::string& message) {
    const Status st = open_error(p);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << message;
    EXPECT_NE(st.message().find(message), std::string::npos) << st.message();
  };
  expect({.partitions = 257}, "--partitions must be in [0, 256], got 257");
  expect({.partitions = -1}, "--partitions must be in [0, 256], got -1");
  expect({.device_mem = 1 << 20}, "--device-mem needs --partitions N");
  expect({.n_gpu_layers = 2}, "-ngl needs devices");
  expect({.partitions = 2,
          .n_gpu_layers = 9,
          .split_mode = SplitMode::kTensor,
          .tensor_split = {1.0f, 1.0f, 1.0f}},
         "-ts gives 3 proportions for 2 devices");
  expect({.partitions = 2,
          .n_gpu_layers = 9,
          .split_mode = SplitMode::kTensor,
          .tensor_split = {1.0f, 0.0f}},
         "every device needs a positive, finite proportion");
  expect({.devices = "part:999"}, "partition index 999 is out of range [0, 255]");
  expect({.partitions = 2, .n_gpu_layers = 9, .tensor_split = {-1.0f, 1.0f}}, "-ts");
}

TEST(Open, MissingFileNamesIt) {
  auto opened = open("/nonexistent.gguf", {}, {});
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("/nonexistent.gguf"), std::string::npos);
}

// The session's size is checked from the header, before any weight is read.
TEST(Open, ASessionTooLargeIsOutOfMemory) {
  const Status st = open_error({}, {.n_ctx = int64_t{1} << 24});
  EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory) << st.message();
}

TEST(Open, PartitionsHoldTheOffloadedLayers) {
  auto opened = open(kModel, {.partitions = 2, .n_gpu_layers = 99, .split_mode = SplitMode::kNone},
                     {.n_ctx = 32});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  ASSERT_EQ(opened->layout.devices.size(), 1u) << "-sm none keeps the first device";
  for (int d : opened->layout.layer_device) EXPECT_EQ(d, 0);
  EXPECT_EQ(opened->session->n_ctx(), 32);
}

TEST(Open, ModelThenSessionEqualsOpen) {
  const OpenParams p{.partitions = 2, .n_gpu_layers = 3, .tensor_split = {1.0f, 2.0f}};
  const SessionParams sp{.n_ctx = 32, .n_threads = 1};
  auto both = open(kModel, p, sp);
  ASSERT_TRUE(both.ok()) << both.status().message();
  auto model = open_model(kModel, p);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->layout.layer_device, both->layout.layer_device);
  auto session = open_session(*model, sp);
  ASSERT_TRUE(session.ok()) << session.status().message();
  const std::vector<int32_t> tokens = {1, 400, 300, 200};
  ASSERT_TRUE(both->session->decode(tokens).ok());
  ASSERT_TRUE((*session)->decode(tokens).ok());
  const auto a = both->session->logits();
  const auto b = (*session)->logits();
  EXPECT_EQ(std::vector<float>(a.begin(), a.end()), std::vector<float>(b.begin(), b.end()));
}

// The host's huge-page copy regroups q4_0 and q4_k matrices for the kernels that read them
// (cpu/weight_forms.h); --no-repack keeps the file's layout. Either way the logits are the same
// bits.
void expect_regrouped_with_the_same_logits(const std::string& model, core::Type plain_type,
                                           core::Type grouped_type) {
  const std::string path = testing::model_path(model);
  const SessionParams sp{.n_ctx = 32, .n_threads = 2};
  auto regrouped = open(path, {}, sp);
  auto plain = open(path, {.repack = false}, sp);
  ASSERT_TRUE(regrouped.ok()) << regrouped.status().message();
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const auto count = [](const Opened& o, core::Type t) {
    int n = 0;
    for (const core::Tensor& w : o.model->weights().ctx.tensors()) n += w.type == t ? 1 : 0;
    return n;
  };
  const bool expected = memory::huge_pages_supported() &&
                        cpu::host_weight_type(plain_type, {256, 256, 1, 1}) == grouped_type;
  EXPECT_EQ(count(*plain, grouped_type), 0);
  EXPECT_GT(count(*plain, plain_type), 0);
  if (expected) {
    EXPECT_GT(count(*regrouped, grouped_type), 0);
  }
  EXPECT_EQ(regrouped->model->weights().tok_embd->type, plain->model->weights().tok_embd->type);
  // Prefill (panels) and then decode steps.
  const std::vector<int32_t> prompt = {1, 400, 300, 200, 17, 90, 33};
  ASSERT_TRUE(regrouped->session->decode(prompt, true).ok());
  ASSERT_TRUE(plain->session->decode(prompt, true).ok());
  for (int32_t next : {5, 6, 7}) {
    const auto a = regrouped->session->logits();
    const auto b = plain->session->logits();
    ASSERT_EQ(std::vector<float>(a.begin(), a.end()), std::vector<float>(b.begin(), b.end()));
    const std::vector<int32_t> one = {next};
    ASSERT_TRUE(regrouped->session->decode(one).ok());
    ASSERT_TRUE(plain->session->decode(one).ok());
  }
}

TEST(Open, HostCopyRegroupsQ4_0WithTheSameLogits) {
  expect_regrouped_with_the_same_logits("synth256-q4_0.gguf", core::Type::kQ4_0,
                                        core::Type::kQ4_0x16);
}

TEST(Open, HostCopyRegroupsQ8_0WithTheSameLogits) {
  expect_regrouped_with_the_same_logits("synth256-q8_0.gguf", core::Type::kQ8_0,
                                        core::Type::kQ8_0x16);
}

TEST(Open, HostCopyRegroupsQ4_KWithTheSameLogits) {
  expect_regrouped_with_the_same_logits("synth256-q4_k_m.gguf", core::Type::kQ4_K,
                                        core::Type::kQ4_Kx16);
}

}  // namespace
}  // namespace strata::engine
