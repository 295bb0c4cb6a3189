// A tokenizer vocabulary as GGUF stores it (`tokenizer.ggml.*`): token texts, scores, types,
// special token ids and the flags that steer encoding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/file.h"

namespace strata::model {

/// GGUF's token types (`tokenizer.ggml.token_type`), with the same numeric values.
enum class TokenType : int32_t {
  kUndefined = 0,    ///< no type given; decodes to nothing
  kNormal = 1,       ///< an ordinary piece; "▁" stands for a space
  kUnknown = 2,      ///< the UNK token
  kControl = 3,      ///< BOS, EOS and the like; matched in text only under parse_special
  kUserDefined = 4,  ///< matched literally in the text before merging, decodes verbatim
  kUnused = 5,       ///< reserved slot; decodes to nothing
  kByte = 6,         ///< byte fallback "<0xNN>", decodes to that raw byte
};

/// How text becomes tokens (`tokenizer.ggml.model`).
enum class TokenizerModel {
  kSpm,  ///< "llama": SentencePiece merges by score, with byte fallback
  kBpe,  ///< "gpt2": byte-level BPE, merges by rank after a regex pre-tokenizer
};

/// A vocabulary. Built by `from_gguf`, or by hand (tests); `validate` checks either.
struct Vocab {
  TokenizerModel model = TokenizerModel::kSpm;
  /// BPE only: the pre-tokenizer type (`tokenizer.ggml.pre`), "default" when the file names none.
  std::string pre = "default";
  /// BPE only: the merges, "left right" by rank (first merges first).
  std::vector<std::string> merges;

  std::vector<std::string> tokens;  ///< token text by id
  std::vector<float> scores;        ///< merge priority by id (higher merges first)
  std::vector<TokenType> types;     ///< token type by id

  int32_t bos_id = -1;  ///< -1 when the vocabulary has none
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;
  /// Extra end-of-generation ids beyond eos and eot (tokens such as "<|end|>", found by text as
  /// llama.cpp does).
  std::vector<int32_t> eog_ids;

  bool add_bos = true;           ///< encode(add_special) prepends BOS
  bool add_eos = false;          ///< encode(add_special) appends EOS
  bool add_space_prefix = true;  ///< text that starts a fragment gets a leading space

  /// Reads `tokenizer.ggml.*`. The SentencePiece ("llama") and byte-level BPE ("gpt2") models
  /// are supported; any other model is kUnsupported. Defaults follow llama.cpp: for SPM BOS 1,
  /// EOS 2, UNK 0 when their keys are absent, add_bos and add_space_prefix true; for BPE BOS and
  /// EOS 11, no UNK, add_bos and add_space_prefix false; add_eos false for both; missing scores
  /// are 0 and missing types normal. Inconsistent arrays, ids out of range and a BPE vocabulary
  /// without merges are kMalformed.
  static Result<Vocab> from_gguf(const gguf::File& file);

  /// Checks that the arrays have one entry per token, that every id is in range and that a BPE
  /// vocabulary has merges.
  Status validate() const;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
};

}  // namespace strata::model
