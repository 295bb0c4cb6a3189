// `strata tokenize` run as a user would, on the vocabulary-only files in ../shared/vocab. The
// expected ids are llama-tokenize's for the same files and prompts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gguf/value.h"
#include "gguf/writer.h"

namespace {

using strata::testing::Outcome;
using strata::testing::run;
using ::testing::HasSubstr;

std::string vocab(const std::string& name) {
  return std::string(STRATA_SHARED_DIR) + "/vocab/ggml-vocab-" + name + ".gguf";
}

size_t lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

bool have(const std::string& name) {
  return std::filesystem::exists(vocab(name));
}

TEST(TokenizeCli, PrintsIdAndPiecePerLine) {
  if (!have("gpt-2")) GTEST_SKIP() << vocab("gpt-2") << " not found";
  const Outcome o = run("tokenize -m " + vocab("gpt-2") + " -p 'Hello world'");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out, "15496 'Hello'\n995 ' world'\n");
}

TEST(TokenizeCli, IdsAreAJsonList) {
  if (!have("gpt-2")) GTEST_SKIP() << vocab("gpt-2") << " not found";
  const Outcome o = run("tokenize -m " + vocab("gpt-2") + " -p 'Hello world' --ids");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out, "[15496, 995]\n");
}

TEST(TokenizeCli, ReadsTheTextFromAFile) {
  if (!have("gpt-2")) GTEST_SKIP() << vocab("gpt-2") << " not found";
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/tokenize-input.txt";
  std::ofstream(path, std::ios::binary) << "Hello world\n\n";
  const Outcome o = run("tokenize -m " + vocab("gpt-2") + " -f " + path + " --ids");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out, "[15496, 995, 628]\n");
  std::filesystem::remove(path);
  const Outcome missing = run("tokenize -m " + vocab("gpt-2") + " -f " + path);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(lines(missing.out), 1u) << missing.out;
}

TEST(TokenizeCli, BosFollowsTheVocabularyUnlessNoBos) {
  if (!have("deepseek-llm")) GTEST_SKIP() << vocab("deepseek-llm") << " not found";
  const std::string args = "tokenize -m " + vocab("deepseek-llm") + " -p 'Hello world' --ids";
  EXPECT_EQ(run(args).out, "[100000, 17464, 1843]\n");
  EXPECT_EQ(run(args + " --no-bos").out, "[17464, 1843]\n");
}

TEST(TokenizeCli, SpmVocabularies) {
  if (!have("llama-spm")) GTEST_SKIP() << vocab("llama-spm") << " not found";
  const Outcome o = run("tokenize -m " + vocab("llama-spm") + " -p 'Hello world'");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out, "1 '<s>'\n15043 ' Hello'\n3186 ' world'\n");
}

TEST(TokenizeCli, ControlTokenTextsAreParsedUnlessAskedNot) {
  if (!have("gpt-2")) GTEST_SKIP() << vocab("gpt-2") << " not found";
  const std::string args = "tokenize -m " + vocab("gpt-2") + " -p 'Hi<|endoftext|>'";
  const Outcome parsed = run(args);
  ASSERT_EQ(parsed.exit_code, 0) << parsed.out;
  EXPECT_THAT(parsed.out, HasSubstr("50256 '<|endoftext|>'\n"));
  const Outcome plain = run(args + " --no-parse-special");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_THAT(plain.out, ::testing::Not(HasSubstr("50256")));
  EXPECT_THAT(plain.out, HasSubstr("'<'\n"));
}

TEST(TokenizeCli, BpeVocabularyWithoutMergesIsAOneLineError) {
  namespace gguf = strata::gguf;
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/bpe-without-merges.gguf";
  gguf::Writer writer;
  ASSERT_TRUE(writer.add_metadata("tokenizer.ggml.model", gguf::make_string("gpt2")).ok());
  ASSERT_TRUE(writer
                  .add_metadata("tokenizer.ggml.tokens",
                                gguf::make_array(std::vector<std::string>{"a", "b", "ab"}))
                  .ok());
  ASSERT_TRUE(writer.begin(path).ok());
  ASSERT_TRUE(writer.finish().ok());

  const Outcome o = run("tokenize -m " + path + " -p ab");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, HasSubstr("strata tokenize: vocabulary: tokenizer.ggml.merges is missing"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  std::filesystem::remove(path);
}

TEST(TokenizeCli, UnsupportedTokenizerIsAOneLineError) {
  if (!have("bert-bge")) GTEST_SKIP() << vocab("bert-bge") << " not found";
  const Outcome o = run("tokenize -m " + vocab("bert-bge") + " -p hi");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, HasSubstr("tokenizer model 'bert' is not supported yet"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
}

TEST(TokenizeCli, MissingModelIsAUsageError) {
  const Outcome o = run("tokenize -p hi");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.out, HasSubstr("-m FILE.gguf"));
  EXPECT_EQ(run("tokenize -m /nonexistent/vocab.gguf -p hi").exit_code, 1);
}

}  // namespace
