// The regex pre-tokenizers of llama.cpp's BPE vocabularies (`tokenizer.ggml.pre`): they cut text
// into the words that BPE then merges within. The regexes run on PCRE2 with Unicode properties.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace strata::model {

/// A word of the text: a byte range.
struct TextSpan {
  size_t offset = 0;
  size_t size = 0;
};

/// Splits text with one pre-tokenizer type's list of regexes. Immutable; safe to share between
/// threads.
class PreTokenizer {
 public:
  /// The regexes of `pre` (llama.cpp's names: "gpt-2", "llama-bpe", "qwen2", ...). An unknown
  /// type is kUnsupported.
  static Result<PreTokenizer> create(std::string_view pre);

  /// Appends to `words` the words of `text`, which must be valid UTF-8 (see to_valid_utf8).
  /// Each regex in turn cuts every word so far into its matches and the gaps between them, as
  /// llama.cpp's unicode_regex_split does; no byte is dropped.
  void split(std::string_view text, std::vector<TextSpan>& words) const;

  /// Whether a word that is a whole token is taken as it is, without merging (llama-bpe).
  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Regex;
  PreTokenizer() = default;

  std::vector<std::shared_ptr<const Regex>> regexes_;
  bool ignore_merges_ = false;
};

/// `text` with each byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD, as
/// llama.cpp reads text before pre-tokenizing it. Returns `text` itself when it is valid.
std::string_view to_valid_utf8(std::string_view text, std::string& storage);

}  // namespace strata::model
