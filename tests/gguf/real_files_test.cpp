#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gguf/file.h"

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;

TEST(RealFilesTest, Stories260K) {
  const std::string path = STRATA_SHARED_DIR "/models/stories260K.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing";
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(*f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*f->get_int("llama.block_count"), 5);
  EXPECT_EQ(*f->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_FLOAT_EQ(*f->get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  auto tokens = f->get_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ((*tokens)->items.size(), 512u);
  EXPECT_EQ(*(*tokens)->items[1].as_string(), "<s>");
  EXPECT_EQ(f->metadata().size(), 19u);

  // 3 global tensors and 9 per layer.
  EXPECT_EQ(f->tensors().size(), 3u + 5 * 9);
  const TensorInfo* embd = f->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, core::Type::kF32);
  EXPECT_EQ(embd->n_dims, 2);
  EXPECT_EQ(embd->ne[0], 64);
  EXPECT_EQ(embd->ne[1], 512);
  EXPECT_EQ(embd->size, 64u * 512 * 4);
  const TensorInfo* ffn = f->find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->ne[0], 172);
  EXPECT_EQ(ffn->ne[1], 64);
  const TensorInfo* last = f->find_tensor("blk.4.ffn_norm.weight");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(static_cast<const uint8_t*>(f->tensor_data(*last)) + last->size,
            f->data_section() + f->data_section_size());
  EXPECT_EQ(f->file_size(), fs::file_size(path));
}

TEST(RealFilesTest, EveryModelOpens) {
  const fs::path dir = STRATA_SHARED_DIR "/models";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is missing";
  int opened = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    auto f = File::open(entry.path().string());
    ASSERT_TRUE(f.ok()) << entry.path() << ": " << f.status().message();
    EXPECT_FALSE(f->tensors().empty()) << entry.path();
    EXPECT_TRUE(f->find("general.architecture") != nullptr) << entry.path();
    ++opened;
  }
  EXPECT_GT(opened, 0);
}

TEST(RealFilesTest, QuantizedModelTypes) {
  const std::string path = STRATA_SHARED_DIR "/models/synth256-q4_k_m.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing";
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  bool has_k_quant = false;
  for (const TensorInfo& t : f->tensors()) {
    EXPECT_EQ(t.ne[0] % core::block_size(t.type), 0) << t.name;
    has_k_quant = has_k_quant || t.type == core::Type::kQ4_K || t.type == core::Type::kQ6_K;
  }
  EXPECT_TRUE(has_k_quant);
}

TEST(RealFilesTest, EveryVocabOpens) {
  const fs::path dir = STRATA_SHARED_DIR "/vocab";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is missing";
  int opened = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    auto f = File::open(entry.path().string());
    ASSERT_TRUE(f.ok()) << entry.path() << ": " << f.status().message();
    // Vocabulary files hold no tensors and may end before their aligned data section.
    EXPECT_TRUE(f->tensors().empty()) << entry.path();
    EXPECT_EQ(f->data_section_size(), 0u) << entry.path();
    auto tokens = f->get_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << entry.path() << ": " << tokens.status().message();
    EXPECT_GT((*tokens)->items.size(), 0u);
    ++opened;
  }
  EXPECT_GT(opened, 0);
}

}  // namespace
}  // namespace strata::gguf
