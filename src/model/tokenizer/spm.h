// The merge step of llama.cpp's SentencePiece ("llama") tokenizer, apart from the text handling
// around it (special tokens, space prefix, whitespace escaping) that Tokenizer does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata::model {

/// Hashes std::string and std::string_view alike, so a map keyed by std::string can be searched
/// with a view into the text being tokenized, without building a string per lookup.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// Token text -> id.
using TextIdMap = std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>>;

/// What the merge step reads from the vocabulary.
struct SpmTables {
  const TextIdMap& ids_by_text;
  std::span<const float> scores;                ///< by token id
  const std::array<int32_t, 256>& byte_tokens;  ///< fallback token per byte, -1 for none
};

/// Appends to `out` the tokens of `text`, which must already have its spaces escaped to "▁":
/// start from one symbol per UTF-8 character, repeatedly merge the adjacent pair whose
/// concatenation is the highest-scoring token (leftmost first on ties), then emit each symbol's
/// token, or its bytes' fallback tokens when it is not one.
void spm_tokenize(const SpmTables& tables, std::string_view text, std::vector<int32_t>& out);

}  // namespace strata::model
