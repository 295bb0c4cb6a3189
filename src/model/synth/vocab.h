// The tokenizer of a synthetic model: copied from another GGUF file, or a SentencePiece
// vocabulary made up to the size asked for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/value.h"

namespace strata::model {

/// `tokenizer.*` metadata and the number of tokens it defines.
struct SynthVocab {
  std::vector<gguf::KeyValue> metadata;
  int64_t n_vocab = 0;
};

/// Fewest tokens a made-up vocabulary can have: <unk>, <s>, </s> and the 256 byte tokens.
inline constexpr int64_t kMinSynthVocab = 3 + 256;
/// Most tokens a made-up vocabulary can have (its arrays are built in memory).
inline constexpr int64_t kMaxSynthVocab = int64_t{1} << 24;

/// A SentencePiece ("llama") vocabulary of `n_vocab` tokens: <unk>, <s>, </s>, the byte tokens
/// <0x00>..<0xFF>, then "▁", printable ASCII, and lower-case words with and without "▁" in
/// order of length, each reachable by merging two earlier pieces. Any UTF-8 text encodes (byte
/// fallback covers the rest) and decodes back. kInvalidArgument outside [kMinSynthVocab,
/// kMaxSynthVocab].
Result<SynthVocab> make_spm_vocab(int64_t n_vocab);

/// Every `tokenizer.*` key of the GGUF file at `path`, in file order; n_vocab is the length of
/// `tokenizer.ggml.tokens`. kMalformed when that array is missing.
Result<SynthVocab> copy_vocab(const std::string& path);

}  // namespace strata::model
