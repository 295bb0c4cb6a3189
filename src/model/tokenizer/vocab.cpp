#include "model/tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace strata::model {

namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

// llama.cpp marks these texts as end of generation whatever the file says, and takes one of the
// first list as EOT when the file names none; chat-tuned SPM models (Phi-3) rely on it. Where
// several match, llama.cpp's pick depends on hash order; here the earlier in the list wins.
constexpr std::array<std::string_view, 7> kEotTexts = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<EOT>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"};
constexpr std::array<std::string_view, 7> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>"};

Status malformed(std::string message) {
  return error(ErrorCode::kMalformed, std::move(message));
}

// Position of `text` in `texts`, or N.
template <size_t N>
size_t rank_in(const std::array<std::string_view, N>& texts, std::string_view text) {
  for (size_t i = 0; i < N; ++i) {
    if (texts[i] == text) return i;
  }
  return N;
}

// An absent key leaves `id` at its default, as in llama.cpp. So does -1, which converters
// (llama2.c's among them) write, often as the u32 0xFFFFFFFF, for "no such token". Any other
// value must be a token id.
Status read_id(const gguf::File& file, std::string_view key, int32_t n_tokens, int32_t& id) {
  if (file.find(key) == nullptr) return {};
  Result<int64_t> value = file.get_int(key);
  if (!value.ok()) return value.status();
  if (*value == -1 || *value == int64_t{0xFFFFFFFF}) return {};
  if (*value < 0 || *value >= n_tokens) {
    return malformed(std::string(key) + " = " + std::to_string(*value) +
                     " is not a token id (the vocabulary has " + std::to_string(n_tokens) +
                     " tokens)");
  }
  id = static_cast<int32_t>(*value);
  return {};
}

Status read_flag(const gguf::File& file, std::string_view key, bool& flag) {
  if (file.find(key) == nullptr) return {};
  Result<bool> value = file.get_bool(key);
  if (!value.ok()) return value.status();
  flag = *value;
  return {};
}

Status read_tokens(const gguf::File& file, std::vector<std::string>& tokens) {
  Result<const gguf::Array*> array = file.get_array(kTokensKey);
  if (!array.ok()) return array.status();
  const std::vector<gguf::Value>& items = (*array)->items;
  if (items.empty()) return malformed(std::string(kTokensKey) + " is empty");
  if (items.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return malformed(std::string(kTokensKey) + " has too many tokens");
  }
  tokens.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string* text = items[i].as_string();
    if (text == nullptr) {
      return malformed(std::string(kTokensKey) + "[" + std::to_string(i) + "] is not a string");
    }
    // llama.cpp renames empty tokens so that no text lookup can ever match the empty string.
    tokens.push_back(text->empty() ? "[EMPTY_" + std::to_string(i) + "]" : *text);
  }
  return {};
}

// The array under `key` must have one entry per token; absent, the caller keeps its default.
Result<const gguf::Array*> read_per_token_array(const gguf::File& file, std::string_view key,
                                                size_t n_tokens) {
  Result<const gguf::Array*> array = file.get_array(key);
  if (!array.ok()) return array.status();
  if ((*array)->items.size() != n_tokens) {
    return malformed(std::string(key) + " has " + std::to_string((*array)->items.size()) +
                     " entries but there are " + std::to_string(n_tokens) + " tokens");
  }
  return *array;
}

Status read_scores(const gguf::File& file, std::vector<float>& scores) {
  if (file.find(kScoresKey) == nullptr) return {};
  Result<const gguf::Array*> array = read_per_token_array(file, kScoresKey, scores.size());
  if (!array.ok()) return array.status();
  for (size_t i = 0; i < scores.size(); ++i) {
    std::optional<double> score = (*array)->items[i].as_double();
    if (!score) {
      return malformed(std::string(kScoresKey) + "[" + std::to_string(i) + "] is not a number");
    }
    scores[i] = static_cast<float>(*score);
  }
  return {};
}

Status read_types(const gguf::File& file, std::vector<TokenType>& types) {
  if (file.find(kTypesKey) == nullptr) return {};
  Result<const gguf::Array*> array = read_per_token_array(file, kTypesKey, types.size());
  if (!array.ok()) return array.status();
  for (size_t i = 0; i < types.size(); ++i) {
    std::optional<int64_t> type = (*array)->items[i].as_int();
    if (!type || *type < 0 || *type > static_cast<int64_t>(TokenType::kByte)) {
      return malformed(std::string(kTypesKey) + "[" + std::to_string(i) + "] is not a token type");
    }
    types[i] = static_cast<TokenType>(*type);
  }
  return {};
}

Status read_merges(const gguf::File& file, std::vector<std::string>& merges) {
  if (file.find(kMergesKey) == nullptr) {
    return malformed(std::string(kMergesKey) + " is missing: a BPE vocabulary needs its merges");
  }
  Result<const gguf::Array*> array = file.get_array(kMergesKey);
  if (!array.ok()) return array.status();
  merges.reserve((*array)->items.size());
  for (size_t i = 0; i < (*array)->items.size(); ++i) {
    const std::string* text = (*array)->items[i].as_string();
    if (text == nullptr) {
      return malformed(std::string(kMergesKey) + "[" + std::to_string(i) + "] is not a string");
    }
    merges.push_back(*text);
  }
  return {};
}

// Mirrors llama.cpp's detection of end-of-generation tokens by their text. The tokens found are
// forced to control type, as llama.cpp does: they decode to nothing and are matched in text only
// under parse_special.
void detect_eog_tokens(Vocab& vocab) {
  const bool find_eot = vocab.eot_id < 0;
  size_t eot_rank = kEotTexts.size();
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const std::string& text = vocab.tokens[static_cast<size_t>(id)];
    const size_t rank = rank_in(kEotTexts, text);
    const bool is_eog = rank_in(kEogTexts, text) < kEogTexts.size();
    if (find_eot && rank < eot_rank) {
      vocab.eot_id = id;
      eot_rank = rank;
    }
    if (is_eog) {
      vocab.eog_ids.push_back(id);
      vocab.types[static_cast<size_t>(id)] = TokenType::kControl;
    }
  }
  if (find_eot && vocab.eot_id >= 0) {
    vocab.types[static_cast<size_t>(vocab.eot_id)] = TokenType::kControl;
  }
}

Status check_id(const char* name, int32_t id, int32_t n_tokens) {
  if (id < -1 || id >= n_tokens) {
    return malformed(std::string(name) + " id " + std::to_string(id) +
                     " is not a token id (the vocabulary has " + std::to_string(n_tokens) +
                     " tokens)");
  }
  return {};
}

}  // namespace

Result<Vocab> Vocab::from_gguf(const gguf::File& file) {
  if (file.find(kModelKey) == nullptr) {
    return error(ErrorCode::kNotFound, "vocabulary: " + std::string(kModelKey) + " is missing");
  }
  Result<std::string> model = file.get_string(kModelKey);
  if (!model.ok()) return model.status().with_context("vocabulary");
  Vocab vocab;
  if (*model == "llama") {
    vocab.model = TokenizerModel::kSpm;
  } else if (*model == "gpt2") {
    vocab.model = TokenizerModel::kBpe;
  } else {
    return error(ErrorCode::kUnsupported, "tokenizer model '" + *model + "' is not supported yet");
  }

  Status status = read_tokens(file, vocab.tokens);
  if (!status.ok()) return status.with_context("vocabulary");
  const int32_t n = vocab.size();
  vocab.scores.assign(vocab.tokens.size(), 0.0f);
  vocab.types.assign(vocab.tokens.size(), TokenType::kNormal);
  // llama.cpp's defaults, kept only where the vocabulary is large enough to hold them.
  if (vocab.model == TokenizerModel::kSpm) {
    vocab.unk_id = n > 0 ? 0 : -1;
    vocab.bos_id = n > 1 ? 1 : -1;
    vocab.eos_id = n > 2 ? 2 : -1;
  } else {
    vocab.bos_id = n > 11 ? 11 : -1;
    vocab.eos_id = n > 11 ? 11 : -1;
    vocab.add_bos = false;
    vocab.add_space_prefix = false;
    status = read_merges(file, vocab.merges);
    if (status.ok() && file.find(kPreKey) != nullptr) {
      Result<std::string> pre = file.get_string(kPreKey);
      if (pre.ok()) {
        vocab.pre = *pre;
      } else {
        status = pre.status();
      }
    }
    if (!status.ok()) return status.with_context("vocabulary");
    // Pre-tokenizer types whose models llama.cpp starts with BOS unless the file says otherwise.
    constexpr std::array<std::string_view, 10> kBosFirst = {
        "llama3",  "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
        "pixtral", "midm-2.0", "lfm2",      "tekken",  "chameleon"};
    vocab.add_bos = std::find(kBosFirst.begin(), kBosFirst.end(), vocab.pre) != kBosFirst.end();
  }

  const std::pair<std::string_view, int32_t*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &vocab.bos_id},
      {"tokenizer.ggml.eos_token_id", &vocab.eos_id},
      {"tokenizer.ggml.unknown_token_id", &vocab.unk_id},
      {"tokenizer.ggml.padding_token_id", &vocab.pad_id},
      {"tokenizer.ggml.eot_token_id", &vocab.eot_id},
  };
  const std::pair<std::string_view, bool*> flags[] = {
      {"tokenizer.ggml.add_bos_token", &vocab.add_bos},
      {"tokenizer.ggml.add_eos_token", &vocab.add_eos},
      {"tokenizer.ggml.add_space_prefix", &vocab.add_space_prefix},
  };
  status = read_scores(file, vocab.scores);
  if (status.ok()) status = read_types(file, vocab.types);
  for (const auto& [key, id] : ids) {
    if (status.ok()) status = read_id(file, key, n, *id);
  }
  for (const auto& [key, flag] : flags) {
    if (status.ok()) status = read_flag(file, key, *flag);
  }
  if (!status.ok()) return status.with_context("vocabulary");

  detect_eog_tokens(vocab);
  status = vocab.validate();
  if (!status.ok()) return status.with_context("vocabulary");
  return vocab;
}

Status Vocab::validate() const {
  if (tokens.empty()) return malformed("the vocabulary has no tokens");
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return malformed("the vocabulary has too many tokens");
  }
  if (scores.size() != tokens.size() || types.size() != tokens.size()) {
    return malformed("the vocabulary has " + std::to_string(tokens.size()) + " tokens but " +
                     std::to_string(scores.size()) + " scores and " + std::to_string(types.size()) +
                     " types");
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const auto t = static_cast<int32_t>(types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::kByte)) {
      return malformed("token " + std::to_string(i) + " has unknown type " + std::to_string(t));
    }
  }
  const int32_t n = size();
  const std::pair<const char*, int32_t> named[] = {
      {"BOS", bos_id}, {"EOS", eos_id}, {"UNK", unk_id}, {"PAD", pad_id}, {"EOT", eot_id}};
  for (const auto& [name, id] : named) {
    STRATA_RETURN_IF_ERROR(check_id(name, id, n));
  }
  for (int32_t id : eog_ids) {
    if (id < 0) return malformed("end-of-generation id " + std::to_string(id) + " is negative");
    STRATA_RETURN_IF_ERROR(check_id("end-of-generation", id, n));
  }
  if (model == TokenizerModel::kBpe && merges.empty()) {
    return malformed("the BPE vocabulary has no merges (tokenizer.ggml.merges is empty)");
  }
  if (add_bos && bos_id < 0) return malformed("the vocabulary adds BOS but has no BOS token");
  if (add_eos && eos_id < 0) return malformed("the vocabulary adds EOS but has no EOS token");
  return {};
}

}  // namespace strata::model
