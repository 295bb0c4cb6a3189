// Text <-> token ids with llama.cpp's SentencePiece ("llama") and byte-level BPE ("gpt2")
// tokenizers, token-exact.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/file.h"
#include "model/tokenizer/bpe.h"
#include "model/tokenizer/spm.h"
#include "model/tokenizer/vocab.h"

namespace strata::model {

/// Encodes and decodes text over a Vocab. Immutable once built, so one instance may serve
/// several threads.
class Tokenizer {
 public:
  /// Validates `vocab` and builds the lookup tables (for BPE the pre-tokenizer and the merge
  /// table: an unknown pre-tokenizer type is kUnsupported).
  static Result<Tokenizer> create(Vocab vocab);
  /// Vocab::from_gguf, then create.
  static Result<Tokenizer> from_gguf(const gguf::File& file);

  /// Token ids of `text`. `add_special` adds BOS (and EOS) where the vocabulary asks for them.
  /// `parse_special` also turns control and unknown token texts found in `text` into their
  /// tokens; user-defined token texts are always matched. SPM: each stretch of plain text is
  /// prefixed with a space when it starts the input or follows a special token (when
  /// add_space_prefix), has its spaces written "▁", and is merged into tokens. BPE: each
  /// stretch is pre-tokenized and merged by BpeEncoder.
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special = false) const;

  /// The text of one token: "▁" becomes a space (SPM), a byte token "<0xNN>" its raw byte
  /// (possibly part of a UTF-8 sequence), a BPE token the bytes its characters stand for,
  /// user-defined tokens their text. Control and unknown tokens give "" unless
  /// `render_special`, which gives their text. Ids out of range give "".
  std::string token_to_piece(int32_t id, bool render_special = false) const;

  /// The concatenated pieces of `ids`. `strip_leading_space` removes the one space that
  /// add_space_prefix put at the start of the first piece, so that
  /// decode(encode(s, false), true) == s for text the vocabulary covers.
  std::string decode(std::span<const int32_t> ids, bool strip_leading_space,
                     bool render_special = false) const;

  /// Whether `id` ends generation: EOS, EOT or another end-of-generation token.
  bool is_eog(int32_t id) const;

  int32_t n_vocab() const { return vocab_.size(); }
  int32_t bos_id() const { return vocab_.bos_id; }
  int32_t eos_id() const { return vocab_.eos_id; }
  const Vocab& vocab() const { return vocab_; }

 private:
  explicit Tokenizer(Vocab vocab);
  void encode_plain(std::string_view text, bool after_special, std::vector<int32_t>& out) const;

  /// Piece of `id` without the caches (build time, and render_special).
  std::string make_piece(int32_t id, bool render_special) const;
  SpmTables spm_tables() const { return {ids_by_text_, vocab_.scores, byte_tokens_}; }

  Vocab vocab_;
  TextIdMap ids_by_text_;
  std::array<int32_t, 256> byte_tokens_{};
  /// BPE vocabularies only.
  std::optional<BpeEncoder> bpe_;
  /// Control, user-defined and unknown tokens, longest text first: the order llama.cpp splits
  /// them out of the text in.
  std::vector<int32_t> special_tokens_;
  /// token_to_piece(id) for every id, so decoding is a lookup per token.
  std::vector<std::string> pieces_;
};

}  // namespace strata::model
