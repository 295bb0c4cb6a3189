// llama.cpp's byte-level BPE ("gpt2") tokenizer: regex pre-tokenization, GPT-2's byte-to-
// character alphabet, merges by rank. Special tokens are split out before, by Tokenizer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/spm.h"
#include "model/tokenizer/vocab.h"

namespace strata::model {

/// GPT-2's byte-level alphabet: the code point that stands for byte `b` in token texts.
/// Printable Latin-1 bytes stand for themselves; the others, in order, for U+0100 onwards.
uint32_t byte_to_codepoint(uint8_t b);

/// The bytes that a byte-level token text stands for. A character outside the alphabet is
/// kept as it is.
std::string decode_byte_level(std::string_view text);

/// Encodes plain text (no special tokens) with a BPE vocabulary. Immutable; thread-safe.
class BpeEncoder {
 public:
  /// The pre-tokenizer of vocab.pre and the merge table of vocab.merges; `ids_by_text` maps
  /// the vocabulary's texts to ids. An unknown pre-tokenizer is kUnsupported; a merge without
  /// a space is kMalformed.
  static Result<BpeEncoder> create(const Vocab& vocab, const TextIdMap& ids_by_text);

  /// Appends the tokens of `text` to `out`: invalid UTF-8 is read as U+FFFD (as llama.cpp
  /// does), the text is cut into words, and each word, written in the byte alphabet, is merged
  /// from single bytes by lowest merge rank, leftmost first. `ids_by_text` is the map given to
  /// create.
  void encode(std::string_view text, const TextIdMap& ids_by_text, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    int32_t rank = -1;    ///< -1: no such merge
    int32_t result = -1;  ///< symbol of the merged text
  };
  /// (left symbol, right symbol) -> merge, open addressing: the lookup in the inner loop of
  /// merging, where std::unordered_map's modulo and node chasing showed in profiles.
  class MergeTable {
   public:
    void reserve(size_t n);
    /// Keeps the first merge of a pair, as llama.cpp's map emplace does.
    void insert(int32_t left, int32_t right, Merge merge);
    Merge find(int32_t left, int32_t right) const;

   private:
    size_t slot(uint64_t key) const;
    std::vector<uint64_t> keys_;  ///< kEmpty where free
    std::vector<Merge> values_;
    int shift_ = 64;
  };
  struct Scratch;

  BpeEncoder(PreTokenizer pre, int32_t n_vocab) : pre_(std::move(pre)), n_vocab_(n_vocab) {}
  void encode_word(std::string_view word, const TextIdMap& ids_by_text, Scratch& scratch,
                   std::vector<int32_t>& out) const;

  PreTokenizer pre_;
  /// Symbols are token ids, and ids from n_vocab up for texts that merges name but the
  /// vocabulary lacks.
  MergeTable merges_;
  int32_t n_vocab_ = 0;
  /// The symbol of each byte's character, -1 when nothing names it.
  std::array<int32_t, 256> byte_symbols_{};
  /// Where a symbol is not a token, llama.cpp emits the single-byte tokens of its text's bytes:
  /// for each byte, those of its character's (at most two) UTF-8 bytes, -1 where none.
  std::array<std::array<int32_t, 2>, 256> byte_fallback_{};
};

}  // namespace strata::model
