#include "model/tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

namespace strata::model {

namespace {

// U+2581 LOWER ONE EIGHTH BLOCK: SentencePiece's stand-in for a space inside tokens.
constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";

// A stretch of the input: plain text to merge, or a special token matched literally.
struct Fragment {
  int32_t token = -1;  ///< the special token, or -1 for plain text
  size_t offset = 0;
  size_t size = 0;
};

bool is_hidden_special(TokenType type) {
  return type == TokenType::kControl || type == TokenType::kUnknown;
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      out += ' ';
      pos += kSpaceMarker.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte a "<0xNN>" token stands for. Like llama.cpp (strtol on the two characters after
// "<0x"), digits are read until the first non-hex character.
char byte_of_token(std::string_view text) {
  int value = 0;
  for (size_t i = 3; i < std::min<size_t>(text.size(), 5); ++i) {
    const int digit = hex_digit(text[i]);
    if (digit < 0) break;
    value = value * 16 + digit;
  }
  return static_cast<char>(value);
}

}  // namespace

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
  STRATA_RETURN_IF_ERROR(vocab.validate());
  Tokenizer tokenizer(std::move(vocab));
  if (tokenizer.vocab_.model == TokenizerModel::kBpe) {
    Result<BpeEncoder> bpe = BpeEncoder::create(tokenizer.vocab_, tokenizer.ids_by_text_);
    if (!bpe.ok()) return bpe.status();
    tokenizer.bpe_.emplace(std::move(bpe).value());
  }
  return tokenizer;
}

Result<Tokenizer> Tokenizer::from_gguf(const gguf::File& file) {
  Result<Vocab> vocab = Vocab::from_gguf(file);
  if (!vocab.ok()) return vocab.status();
  return create(std::move(vocab).value());
}

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  const int32_t n = vocab_.size();
  ids_by_text_.reserve(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    // Assignment, not emplace: with duplicate texts the last id wins, as in llama.cpp.
    ids_by_text_[vocab_.tokens[static_cast<size_t>(id)]] = id;
  }

  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const std::string hex_text = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    auto it = ids_by_text_.find(hex_text);
    if (it == ids_by_text_.end()) it = ids_by_text_.find(std::string(1, static_cast<char>(b)));
    // llama.cpp aborts when a byte has no token; UNK (or dropping the byte) keeps going.
    byte_tokens_[static_cast<size_t>(b)] = it != ids_by_text_.end() ? it->second : vocab_.unk_id;
  }

  for (int32_t id = 0; id < n; ++id) {
    const TokenType type = vocab_.types[static_cast<size_t>(id)];
    if (is_hidden_special(type) || type == TokenType::kUserDefined) special_tokens_.push_back(id);
  }
  // Stable, so equal lengths keep id order (llama.cpp's std::sort leaves that order unspecified).
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [&](int32_t a, int32_t b) {
    return vocab_.tokens[static_cast<size_t>(a)].size() >
           vocab_.tokens[static_cast<size_t>(b)].size();
  });

  pieces_.reserve(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) pieces_.push_back(make_piece(id, false));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  // Split out special token texts, longest first, each at every leftmost non-overlapping match
  // inside the plain fragments that remain.
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, 0, text.size()});
  std::vector<Fragment> split;
  for (const int32_t id : special_tokens_) {
    if (!parse_special && is_hidden_special(vocab_.types[static_cast<size_t>(id)])) continue;
    const std::string& needle = vocab_.tokens[static_cast<size_t>(id)];
    if (needle.empty() || text.find(needle) == std::string_view::npos) continue;
    split.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token >= 0) {
        split.push_back(fragment);
        continue;
      }
      const size_t end = fragment.offset + fragment.size;
      const std::string_view window = text.substr(0, end);
      size_t start = fragment.offset;
      for (size_t match; (match = window.find(needle, start)) != std::string_view::npos;) {
        if (match > start) split.push_back({-1, start, match - start});
        split.push_back({id, match, needle.size()});
        start = match + needle.size();
      }
      if (start < end) split.push_back({-1, start, end - start});
    }
    fragments.swap(split);
  }

  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  bool after_special = true;  // the start of the input counts as following a special token
  for (const Fragment& fragment : fragments) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_special = true;
      continue;
    }
    encode_plain(text.substr(fragment.offset, fragment.size), after_special, out);
    after_special = false;
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

void Tokenizer::encode_plain(std::string_view text, bool after_special,
                             std::vector<int32_t>& out) const {
  switch (vocab_.model) {
    case TokenizerModel::kBpe:
      bpe_->encode(text, ids_by_text_, out);
      return;
    case TokenizerModel::kSpm: {
      std::string escaped;
      escaped.reserve(text.size() + kSpaceMarker.size());
      if (vocab_.add_space_prefix && after_special) escaped += kSpaceMarker;
      for (const char c : text) {
        if (c == ' ') {
          escaped += kSpaceMarker;
        } else {
          escaped += c;
        }
      }
      spm_tokenize(spm_tables(), escaped, out);
      return;
    }
  }
}

std::string Tokenizer::make_piece(int32_t id, bool render_special) const {
  const std::string& text = vocab_.tokens[static_cast<size_t>(id)];
  switch (vocab_.types[static_cast<size_t>(id)]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
      return render_special ? text : std::string();
    case TokenType::kUserDefined:
      return text;
    case TokenType::kNormal:
      return vocab_.model == TokenizerModel::kBpe ? decode_byte_level(text) : unescape_spaces(text);
    case TokenType::kByte:
      // llama.cpp's BPE decoding has no byte tokens and suppresses them.
      return vocab_.model == TokenizerModel::kBpe ? std::string()
                                                  : std::string(1, byte_of_token(text));
    case TokenType::kUndefined:
    case TokenType::kUnused:
      return {};
  }
  return {};
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) return {};
  if (render_special) return make_piece(id, true);
  return pieces_[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool strip_leading_space,
                              bool render_special) const {
  std::string out;
  // Like llama.cpp, only the first piece is stripped (even when it is empty), and only when the
  // vocabulary adds the space in the first place.
  bool strip = strip_leading_space && vocab_.add_space_prefix;
  for (const int32_t id : ids) {
    std::string_view piece;
    if (id >= 0 && id < n_vocab()) {
      const auto index = static_cast<size_t>(id);
      const bool raw = render_special && is_hidden_special(vocab_.types[index]);
      piece = raw ? std::string_view(vocab_.tokens[index]) : std::string_view(pieces_[index]);
    }
    if (strip && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    strip = false;
    out += piece;
  }
  return out;
}

bool Tokenizer::is_eog(int32_t id) const {
  if (id < 0) return false;
  if (id == vocab_.eos_id || id == vocab_.eot_id) return true;
  return std::find(vocab_.eog_ids.begin(), vocab_.eog_ids.end(), id) != vocab_.eog_ids.end();
}

}  // namespace strata::model
