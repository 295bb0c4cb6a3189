#include "model/synth/vocab.h"

#include <cstdio>
#include <utility>

#include "gguf/file.h"
#include "model/tokenizer/vocab.h"

namespace strata::model {
namespace {

constexpr std::string_view kSpace = "\xe2\x96\x81";  // "▁", SentencePiece's space

struct VocabBuilder {
  int64_t limit;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;

  bool full() const { return static_cast<int64_t>(tokens.size()) >= limit; }

  void add(std::string text, TokenType type, float score) {
    if (full()) return;
    tokens.push_back(std::move(text));
    scores.push_back(score);
    types.push_back(static_cast<int32_t>(type));
  }

  // SPM merges the adjacent pair whose union scores highest, so scores fall with the order of
  // addition: shorter pieces first, and every piece's prefixes exist before it does.
  void add_piece(std::string text) {
    add(std::move(text), TokenType::kNormal, -static_cast<float>(tokens.size()));
  }
};

// Appends every lower-case word of `length` letters (with and without a leading "▁", single
// letters only with it: the plain ones are already ASCII pieces) until the builder is full.
void add_words(VocabBuilder& b, int length) {
  std::string word(static_cast<size_t>(length), 'a');
  while (!b.full()) {
    b.add_piece(std::string(kSpace) + word);
    if (length > 1) b.add_piece(word);
    // Next word in lexicographic order; done after "zz..z".
    int i = length - 1;
    while (i >= 0 && word[static_cast<size_t>(i)] == 'z') word[static_cast<size_t>(i--)] = 'a';
    if (i < 0) return;
    ++word[static_cast<size_t>(i)];
  }
}

}  // namespace

Result<SynthVocab> make_spm_vocab(int64_t n_vocab) {
  if (n_vocab < kMinSynthVocab || n_vocab > kMaxSynthVocab) {
    return error(ErrorCode::kInvalidArgument,
                 "a made-up vocabulary has " + std::to_string(kMinSynthVocab) + " to " +
                     std::to_string(kMaxSynthVocab) +
                     " tokens (at least <unk>, <s>, </s> and 256 bytes), not " +
                     std::to_string(n_vocab));
  }
  VocabBuilder b{n_vocab, {}, {}, {}};
  b.tokens.reserve(static_cast<size_t>(n_vocab));
  b.add("<unk>", TokenType::kUnknown, 0.0f);
  b.add("<s>", TokenType::kControl, 0.0f);
  b.add("</s>", TokenType::kControl, 0.0f);
  for (int byte = 0; byte < 256; ++byte) {
    char text[8];
    std::snprintf(text, sizeof(text), "<0x%02X>", byte);
    b.add(text, TokenType::kByte, 0.0f);
  }
  b.add_piece(std::string(kSpace));
  for (char c = '!'; c <= '~'; ++c) b.add_piece(std::string(1, c));
  for (int length = 1; !b.full(); ++length) add_words(b, length);

  SynthVocab v;
  v.n_vocab = n_vocab;
  auto add = [&v](const char* key, gguf::Value value) {
    v.metadata.push_back({key, std::move(value)});
  };
  add("tokenizer.ggml.model", gguf::make_string("llama"));
  add("tokenizer.ggml.tokens", gguf::make_array(b.tokens));
  add("tokenizer.ggml.scores", gguf::make_array(b.scores));
  add("tokenizer.ggml.token_type", gguf::make_array(b.types));
  add("tokenizer.ggml.bos_token_id", gguf::make_value(uint32_t{1}));
  add("tokenizer.ggml.eos_token_id", gguf::make_value(uint32_t{2}));
  add("tokenizer.ggml.unknown_token_id", gguf::make_value(uint32_t{0}));
  add("tokenizer.ggml.add_bos_token", gguf::make_value(true));
  add("tokenizer.ggml.add_eos_token", gguf::make_value(false));
  return v;
}

Result<SynthVocab> copy_vocab(const std::string& path) {
  Result<gguf::File> file = gguf::File::open(path);
  if (!file.ok()) return file.status().with_context("vocabulary");
  const gguf::Value* tokens = file->find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->as_array() == nullptr) {
    return error(ErrorCode::kMalformed,
                 "vocabulary '" + path + "' has no tokenizer.ggml.tokens array");
  }
  SynthVocab v;
  v.n_vocab = static_cast<int64_t>(tokens->as_array()->items.size());
  for (const gguf::KeyValue& kv : file->metadata()) {
    if (kv.key.starts_with("tokenizer.")) v.metadata.push_back(kv);
  }
  return v;
}

}  // namespace strata::model
