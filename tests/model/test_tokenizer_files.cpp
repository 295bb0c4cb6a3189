// The SPM and BPE tokenizers against llama.cpp's outputs for real vocabularies in ../shared.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/file.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/vocab.h"

namespace strata::model {
namespace {

using Ids = std::vector<int32_t>;

const std::string kShared = STRATA_SHARED_DIR;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Result<Tokenizer> load_tokenizer(const std::string& path) {
  Result<gguf::File> file = gguf::File::open(path);
  if (!file.ok()) return file.status();
  return Tokenizer::from_gguf(*file);
}

// One case of llama.cpp's tokenizer test vectors: an input and the ids expected (no BOS).
struct VocabCase {
  std::string text;
  Ids ids;
};

// `.inp` holds the cases one after another, each followed by "\n__ggml_vocab_test__\n" (the
// newline before the marker belongs to the separator); `.out` has one line of ids per case.
std::vector<VocabCase> read_vocab_cases(const std::string& gguf_path) {
  const std::string inp = read_all(gguf_path + ".inp");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  size_t pos = 0;
  for (size_t next; (next = inp.find(separator, pos)) != std::string::npos;) {
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + separator.size();
  }
  EXPECT_EQ(pos, inp.size()) << "text after the last separator";

  std::ifstream out(gguf_path + ".out");
  std::string line;
  for (VocabCase& c : cases) {
    EXPECT_TRUE(std::getline(out, line)) << "fewer lines in .out than cases in .inp";
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
  }
  return cases;
}

std::string shown(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return "\"" + out + "\"";
}

// llama.cpp's test (test-tokenizer-0) encodes every case with add_special and parse_special
// both off, so these are the plain merge over the whole text (user-defined tokens aside).
void check_vocab_cases(const std::string& name) {
  const std::string path = kShared + "/vocab/" + name;
  if (!std::filesystem::exists(path) || !std::filesystem::exists(path + ".inp")) {
    GTEST_SKIP() << path << " not found";
  }
  const Result<Tokenizer> loaded = load_tokenizer(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& tokenizer = *loaded;
  const std::vector<VocabCase> cases = read_vocab_cases(path);
  ASSERT_FALSE(cases.empty());
  for (const VocabCase& c : cases) {
    const Ids ids = tokenizer.encode(c.text, false, false);
    EXPECT_EQ(ids, c.ids) << "input " << shown(c.text);
    if (tokenizer.vocab().model == TokenizerModel::kSpm) {
      // SPM applies no normalisation here and byte fallback covers every byte, so every case,
      // invalid UTF-8 included, decodes back to its input.
      EXPECT_EQ(tokenizer.decode(ids, true), c.text) << "input " << shown(c.text);
    } else {
      // Byte-level BPE covers every byte too, but reads invalid UTF-8 as U+FFFD first, as
      // llama.cpp does: valid text decodes back to itself.
      std::string storage;
      const std::string_view valid = to_valid_utf8(c.text, storage);
      EXPECT_EQ(tokenizer.decode(ids, true), valid) << "input " << shown(c.text);
    }
  }
}

class BpeVocabFiles : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeVocabFiles, MatchLlamaCpp) {
  check_vocab_cases(std::string("ggml-vocab-") + GetParam() + ".gguf");
}

// Every BPE vocabulary in ../shared with llama.cpp's test vectors (llama-bpe, qwen2 and
// command-r have vectors but no vocabulary file there).
INSTANTIATE_TEST_SUITE_P(TokenizerFiles, BpeVocabFiles,
                         ::testing::Values("gpt-2", "falcon", "mpt", "starcoder", "refact",
                                           "deepseek-llm", "deepseek-coder", "llama-bpe", "qwen2",
                                           "command-r"));

TEST(TokenizerFiles, LlamaSpmVocabMatchesLlamaCpp) {
  check_vocab_cases("ggml-vocab-llama-spm.gguf");
}

// Phi-3 also uses the SPM model, with chat tokens on top of Llama's vocabulary.
TEST(TokenizerFiles, Phi3VocabMatchesLlamaCpp) {
  check_vocab_cases("ggml-vocab-phi-3.gguf");
}

TEST(TokenizerFiles, LlamaSpmVocabMetadata) {
  const std::string path = kShared + "/vocab/ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const Result<Tokenizer> loaded = load_tokenizer(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& tokenizer = *loaded;
  EXPECT_EQ(tokenizer.n_vocab(), 32000);
  EXPECT_EQ(tokenizer.bos_id(), 1);
  EXPECT_EQ(tokenizer.eos_id(), 2);
  EXPECT_EQ(tokenizer.vocab().unk_id, 0);
  EXPECT_TRUE(tokenizer.vocab().add_bos);
  EXPECT_FALSE(tokenizer.vocab().add_eos);
  EXPECT_TRUE(tokenizer.vocab().add_space_prefix);
  EXPECT_TRUE(tokenizer.is_eog(2));
  EXPECT_FALSE(tokenizer.is_eog(1));
  EXPECT_EQ(tokenizer.vocab().types[1], TokenType::kControl);
  EXPECT_EQ(tokenizer.vocab().types[3], TokenType::kByte);

  // Special texts become tokens only when asked to.
  EXPECT_EQ(tokenizer.encode("<s>Hello", true, true), (Ids{1, 1, 15043}));
  EXPECT_EQ(tokenizer.encode("Hello</s>", false, true), (Ids{15043, 2}));
  EXPECT_NE(tokenizer.encode("Hello</s>", false, false), (Ids{15043, 2}));

  // Every piece of the vocabulary decodes (a lookup per token).
  Ids all(32000);
  for (int32_t i = 0; i < 32000; ++i) all[static_cast<size_t>(i)] = i;
  EXPECT_GT(tokenizer.decode(all, false).size(), 32000u);
}

TEST(TokenizerFiles, Stories260KMatchesGolden) {
  const std::string model = kShared + "/models/stories260K.gguf";
  const std::string golden = kShared + "/golden/tokenizer/stories260K.json";
  if (!std::filesystem::exists(model) || !std::filesystem::exists(golden)) {
    GTEST_SKIP() << "stories260K model or golden file not found";
  }
  const Result<Tokenizer> loaded = load_tokenizer(model);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& tokenizer = *loaded;
  EXPECT_EQ(tokenizer.n_vocab(), 512);
  const nlohmann::json cases = nlohmann::json::parse(read_all(golden));
  ASSERT_TRUE(cases.is_array());
  ASSERT_FALSE(cases.empty());
  for (const nlohmann::json& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    const Ids expected = c.at("tokens").get<Ids>();
    const Ids ids = tokenizer.encode(text, true);
    EXPECT_EQ(ids, expected) << "text " << shown(text);

    ASSERT_FALSE(expected.empty());
    ASSERT_EQ(expected.front(), tokenizer.bos_id());
    const std::span<const int32_t> body(expected.data() + 1, expected.size() - 1);
    EXPECT_EQ(tokenizer.decode(body, false), c.at("detokenized").get<std::string>())
        << "text " << shown(text);
    EXPECT_EQ(tokenizer.decode(body, true), text) << "text " << shown(text);
  }
}

TEST(TokenizerFiles, Gpt2VocabMetadata) {
  const std::string path = kShared + "/vocab/ggml-vocab-gpt-2.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const Result<Tokenizer> loaded = load_tokenizer(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& tokenizer = *loaded;
  EXPECT_EQ(tokenizer.vocab().model, TokenizerModel::kBpe);
  EXPECT_EQ(tokenizer.vocab().pre, "gpt-2");
  EXPECT_EQ(tokenizer.n_vocab(), 50257);
  EXPECT_FALSE(tokenizer.vocab().add_bos);
  EXPECT_FALSE(tokenizer.vocab().add_space_prefix);
  EXPECT_EQ(tokenizer.encode("Hello world", true), (Ids{15496, 995}));
  EXPECT_EQ(tokenizer.token_to_piece(995), " world");
  // "<|endoftext|>" is a control token: matched only under parse_special, and hidden in text.
  const int32_t eot = 50256;
  EXPECT_TRUE(tokenizer.is_eog(eot));
  EXPECT_EQ(tokenizer.encode("Hi<|endoftext|>", false, true), (Ids{17250, eot}));
  EXPECT_NE(tokenizer.encode("Hi<|endoftext|>", false, false), (Ids{17250, eot}));
  EXPECT_EQ(tokenizer.decode(Ids{17250, eot}, false), "Hi");
  EXPECT_EQ(tokenizer.decode(Ids{17250, eot}, false, true), "Hi<|endoftext|>");
}

TEST(TokenizerFiles, WordPieceIsUnsupported) {
  const std::string path = kShared + "/vocab/ggml-vocab-bert-bge.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  Result<gguf::File> file = gguf::File::open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  const Result<Vocab> vocab = Vocab::from_gguf(*file);
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(vocab.status().message(), "tokenizer model 'bert' is not supported yet");
  EXPECT_EQ(Tokenizer::from_gguf(*file).status().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace strata::model
