// Vocab::from_gguf on small GGUF files built in memory: defaults, every key, and bad input.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gguf/file.h"
#include "gguf/value.h"
#include "gguf/writer.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/vocab.h"

namespace strata::model {
namespace {

using Metadata = std::vector<std::pair<std::string, gguf::Value>>;

// A GGUF file holding `metadata` and no tensors; `bytes` keeps its storage alive.
Result<gguf::File> make_file(const Metadata& metadata, std::vector<uint8_t>& bytes) {
  gguf::Writer writer;
  for (const auto& [key, value] : metadata) STRATA_RETURN_IF_ERROR(writer.add_metadata(key, value));
  STRATA_RETURN_IF_ERROR(writer.begin_in_memory());
  STRATA_RETURN_IF_ERROR(writer.finish());
  Result<std::vector<uint8_t>> taken = writer.take_bytes();
  if (!taken.ok()) return taken.status();
  bytes = std::move(taken).value();
  return gguf::File::from_memory(bytes.data(), bytes.size());
}

Result<Vocab> vocab_from(const Metadata& metadata) {
  std::vector<uint8_t> bytes;
  Result<gguf::File> file = make_file(metadata, bytes);
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) return file.status();
  return Vocab::from_gguf(*file);
}

const std::vector<std::string> kTokens = {"<unk>", "<s>", "</s>",
                                          "\xe2\x96\x81"
                                          "a",
                                          "a"};

Metadata minimal() {
  return {{"tokenizer.ggml.model", gguf::make_string("llama")},
          {"tokenizer.ggml.tokens", gguf::make_array(kTokens)}};
}

// `base` with `key` set to `value`, replacing an entry of that key if there is one.
Metadata with(Metadata base, const std::string& key, gguf::Value value) {
  for (auto& [k, v] : base) {
    if (k == key) {
      v = std::move(value);
      return base;
    }
  }
  base.emplace_back(key, std::move(value));
  return base;
}

TEST(VocabFromGguf, LlamaCppDefaultsWhenKeysAreAbsent) {
  const Result<Vocab> v = vocab_from(minimal());
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->tokens, kTokens);
  EXPECT_EQ(v->scores, std::vector<float>(5, 0.0f));
  EXPECT_EQ(v->types, std::vector<TokenType>(5, TokenType::kNormal));
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->pad_id, -1);
  EXPECT_EQ(v->eot_id, -1);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_eos);
  EXPECT_TRUE(v->add_space_prefix);
}

TEST(VocabFromGguf, ReadsEveryKey) {
  Metadata m = minimal();
  m.emplace_back("tokenizer.ggml.scores", gguf::make_array(std::vector<float>{0, 0, 0, -1.5f, -2}));
  m.emplace_back("tokenizer.ggml.token_type",
                 gguf::make_array(std::vector<int32_t>{2, 3, 3, 1, 4}));
  m.emplace_back("tokenizer.ggml.bos_token_id", gguf::make_value(uint32_t{2}));
  m.emplace_back("tokenizer.ggml.eos_token_id", gguf::make_value(uint32_t{1}));
  m.emplace_back("tokenizer.ggml.unknown_token_id", gguf::make_value(uint32_t{4}));
  m.emplace_back("tokenizer.ggml.padding_token_id", gguf::make_value(uint32_t{3}));
  m.emplace_back("tokenizer.ggml.eot_token_id", gguf::make_value(int32_t{0}));
  m.emplace_back("tokenizer.ggml.add_bos_token", gguf::make_value(false));
  m.emplace_back("tokenizer.ggml.add_eos_token", gguf::make_value(true));
  m.emplace_back("tokenizer.ggml.add_space_prefix", gguf::make_value(false));
  const Result<Vocab> v = vocab_from(m);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->scores, (std::vector<float>{0, 0, 0, -1.5f, -2}));
  EXPECT_EQ(v->types,
            (std::vector<TokenType>{TokenType::kUnknown, TokenType::kControl, TokenType::kControl,
                                    TokenType::kNormal, TokenType::kUserDefined}));
  EXPECT_EQ(v->bos_id, 2);
  EXPECT_EQ(v->eos_id, 1);
  EXPECT_EQ(v->unk_id, 4);
  EXPECT_EQ(v->pad_id, 3);
  EXPECT_EQ(v->eot_id, 0);
  EXPECT_FALSE(v->add_bos);
  EXPECT_TRUE(v->add_eos);
  EXPECT_FALSE(v->add_space_prefix);
}

TEST(VocabFromGguf, MinusOneMeansNoToken) {
  // llama2.c's converter writes the padding id as the u32 0xFFFFFFFF.
  Metadata m = with(minimal(), "tokenizer.ggml.padding_token_id", gguf::make_value(~uint32_t{0}));
  m = with(m, "tokenizer.ggml.eot_token_id", gguf::make_value(int32_t{-1}));
  const Result<Vocab> v = vocab_from(m);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->pad_id, -1);
  EXPECT_EQ(v->eot_id, -1);
}

TEST(VocabFromGguf, EndOfGenerationTokensFoundByText) {
  Metadata m = minimal();
  m = with(m, "tokenizer.ggml.tokens",
           gguf::make_array(std::vector<std::string>{"<unk>", "<s>", "</s>", "<|endoftext|>",
                                                     "<|end|>", "a", ""}));
  const Result<Vocab> v = vocab_from(m);
  ASSERT_TRUE(v.ok()) << v.status().message();
  // "<|end|>" ranks before "<|endoftext|>" in llama.cpp's list of EOT texts.
  EXPECT_EQ(v->eot_id, 4);
  EXPECT_EQ(v->types[3], TokenType::kControl);
  EXPECT_EQ(v->types[4], TokenType::kControl);
  EXPECT_EQ(v->types[5], TokenType::kNormal);
  // An empty text is renamed, as llama.cpp does, so that nothing ever matches it.
  EXPECT_EQ(v->tokens[6], "[EMPTY_6]");

  Result<Tokenizer> t = Tokenizer::create(*v);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->is_eog(2));
  EXPECT_TRUE(t->is_eog(3));
  EXPECT_TRUE(t->is_eog(4));
  EXPECT_FALSE(t->is_eog(5));
}

TEST(VocabFromGguf, ErrorsNameTheProblem) {
  struct Case {
    const char* what;
    Metadata metadata;
    ErrorCode code;
    const char* message_part;
  };
  Metadata no_model = minimal();
  no_model.erase(no_model.begin());
  Metadata no_tokens = minimal();
  no_tokens.pop_back();
  const Case cases[] = {
      {"no model", no_model, ErrorCode::kNotFound, "tokenizer.ggml.model"},
      {"gpt2 without merges", with(minimal(), "tokenizer.ggml.model", gguf::make_string("gpt2")),
       ErrorCode::kMalformed, "tokenizer.ggml.merges is missing"},
      {"gpt2 with no merges",
       with(with(minimal(), "tokenizer.ggml.model", gguf::make_string("gpt2")),
            "tokenizer.ggml.merges", gguf::make_array(std::vector<std::string>{})),
       ErrorCode::kMalformed, "has no merges"},
      {"bert", with(minimal(), "tokenizer.ggml.model", gguf::make_string("bert")),
       ErrorCode::kUnsupported, "tokenizer model 'bert' is not supported yet"},
      {"no tokens", no_tokens, ErrorCode::kNotFound, "tokenizer.ggml.tokens"},
      {"empty tokens",
       with(minimal(), "tokenizer.ggml.tokens", gguf::make_array(std::vector<std::string>{})),
       ErrorCode::kMalformed, "empty"},
      {"tokens not strings",
       with(minimal(), "tokenizer.ggml.tokens", gguf::make_array(std::vector<int32_t>{1, 2})),
       ErrorCode::kMalformed, "tokenizer.ggml.tokens[0]"},
      {"short scores",
       with(minimal(), "tokenizer.ggml.scores", gguf::make_array(std::vector<float>{0, 0})),
       ErrorCode::kMalformed, "tokenizer.ggml.scores has 2 entries"},
      {"long types",
       with(minimal(), "tokenizer.ggml.token_type",
            gguf::make_array(std::vector<int32_t>{1, 1, 1, 1, 1, 1})),
       ErrorCode::kMalformed, "tokenizer.ggml.token_type has 6 entries"},
      {"bad type",
       with(minimal(), "tokenizer.ggml.token_type",
            gguf::make_array(std::vector<int32_t>{1, 1, 9, 1, 1})),
       ErrorCode::kMalformed, "tokenizer.ggml.token_type[2]"},
      {"bos out of range",
       with(minimal(), "tokenizer.ggml.bos_token_id", gguf::make_value(uint32_t{5})),
       ErrorCode::kMalformed, "tokenizer.ggml.bos_token_id = 5"},
  };
  for (const Case& c : cases) {
    const Result<Vocab> v = vocab_from(c.metadata);
    ASSERT_FALSE(v.ok()) << c.what;
    EXPECT_EQ(v.status().code(), c.code) << c.what << ": " << v.status().message();
    EXPECT_NE(v.status().message().find(c.message_part), std::string::npos)
        << c.what << ": " << v.status().message();
  }

  // Keys of the wrong type are refused rather than guessed at.
  EXPECT_FALSE(
      vocab_from(with(minimal(), "tokenizer.ggml.add_bos_token", gguf::make_string("yes"))).ok());
  EXPECT_FALSE(
      vocab_from(with(minimal(), "tokenizer.ggml.model", gguf::make_value(uint32_t{1}))).ok());
  EXPECT_FALSE(vocab_from(with(minimal(), "tokenizer.ggml.scores", gguf::make_string("x"))).ok());
}

}  // namespace
}  // namespace strata::model
