#include "model/tokenizer/bpe.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "model/tokenizer/utf8.h"

namespace strata::model {

namespace {

bool stands_for_itself(uint32_t b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

// byte_to_codepoint for every byte, computed once from the rule.
const std::array<uint32_t, 256>& byte_codepoints() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) t[b] = stands_for_itself(b) ? b : next++;
    return t;
  }();
  return table;
}

struct Symbol {
  int32_t id = -1;  ///< symbol id, -1 for none
  int32_t prev = -1;
  int32_t next = -1;
  size_t offset = 0;
  size_t size = 0;  ///< 0 once merged into its left neighbour
};

struct Bigram {
  int32_t rank = 0;
  int32_t left = 0;
  int32_t right = 0;
  int32_t result = -1;  ///< symbol of the merged text
  size_t size = 0;      ///< bytes of left + right when queued: detects a stale entry
};

// The heap's "less" puts the lowest rank, then the leftmost pair, on top, as llama.cpp pops.
bool lower_priority(const Bigram& a, const Bigram& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

uint64_t pair_key(int32_t left, int32_t right) {
  return uint64_t{static_cast<uint32_t>(left)} << 32 | static_cast<uint32_t>(right);
}

// No pair of symbols (both non-negative) has this key.
constexpr uint64_t kEmpty = ~uint64_t{0};

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) {
  return byte_codepoints()[b];
}

std::string decode_byte_level(std::string_view text) {
  static const std::array<int16_t, 512> byte_of = [] {
    std::array<int16_t, 512> t{};
    t.fill(-1);
    for (uint32_t b = 0; b < 256; ++b) t[byte_codepoints()[b]] = static_cast<int16_t>(b);
    return t;
  }();
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    size_t length = 1;
    uint32_t cpt = lead;
    // The alphabet is U+0021..U+0143: one or two UTF-8 bytes.
    if ((lead & 0xE0) == 0xC0 && pos + 1 < text.size()) {
      length = 2;
      cpt = (uint32_t{lead} & 0x1F) << 6 | (static_cast<unsigned char>(text[pos + 1]) & 0x3F);
    } else if (lead >= 0x80) {
      length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 1;
      length = std::min(length, text.size() - pos);
      cpt = 0x10000;  // outside the alphabet
    }
    if (cpt < byte_of.size() && byte_of[cpt] >= 0) {
      out += static_cast<char>(byte_of[cpt]);
    } else {
      out += text.substr(pos, length);
    }
    pos += length;
  }
  return out;
}

void BpeEncoder::MergeTable::reserve(size_t n) {
  // A power of two at least twice n: short probe runs, and a shift instead of a modulo.
  int bits = 4;
  while ((size_t{1} << bits) < 2 * n) ++bits;
  keys_.assign(size_t{1} << bits, kEmpty);
  values_.assign(size_t{1} << bits, Merge{});
  shift_ = 64 - bits;
}

size_t BpeEncoder::MergeTable::slot(uint64_t key) const {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
}

void BpeEncoder::MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  const uint64_t key = pair_key(left, right);
  const size_t mask = keys_.size() - 1;
  for (size_t i = slot(key);; i = (i + 1) & mask) {
    if (keys_[i] == key) return;
    if (keys_[i] == kEmpty) {
      keys_[i] = key;
      values_[i] = merge;
      return;
    }
  }
}

BpeEncoder::Merge BpeEncoder::MergeTable::find(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  const size_t mask = keys_.size() - 1;
  for (size_t i = slot(key);; i = (i + 1) & mask) {
    if (keys_[i] == key) return values_[i];
    if (keys_[i] == kEmpty) return {};
  }
}

struct BpeEncoder::Scratch {
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
  std::string encoded;
};

Result<BpeEncoder> BpeEncoder::create(const Vocab& vocab, const TextIdMap& ids_by_text) {
  Result<PreTokenizer> pre = PreTokenizer::create(vocab.pre);
  if (!pre.ok()) return pre.status();
  BpeEncoder encoder(std::move(pre).value(), vocab.size());

  // Texts that merges name but the vocabulary lacks get symbols past the last token id, so
  // that merging compares integers only.
  TextIdMap extra;
  const auto symbol_of = [&](const std::string& text) {
    const auto it = ids_by_text.find(text);
    if (it != ids_by_text.end()) return it->second;
    const auto [added, inserted] =
        extra.emplace(text, encoder.n_vocab_ + static_cast<int32_t>(extra.size()));
    return added->second;
  };

  encoder.merges_.reserve(vocab.merges.size());
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& merge = vocab.merges[rank];
    // Split at the first space after the first character, as llama.cpp does.
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) {
      return error(ErrorCode::kMalformed, "vocabulary: tokenizer.ggml.merges[" +
                                              std::to_string(rank) + "] '" + merge +
                                              "' is not two texts separated by a space");
    }
    const std::string left = merge.substr(0, space);
    const std::string right = merge.substr(space + 1);
    const int32_t left_id = symbol_of(left);
    const int32_t right_id = symbol_of(right);
    const int32_t result = symbol_of(left + right);
    encoder.merges_.insert(left_id, right_id, Merge{static_cast<int32_t>(rank), result});
  }

  std::string text;
  for (uint32_t b = 0; b < 256; ++b) {
    text.clear();
    append_utf8(byte_to_codepoint(static_cast<uint8_t>(b)), text);
    const auto it = ids_by_text.find(text);
    const auto extra_it = extra.find(text);
    encoder.byte_symbols_[b] = it != ids_by_text.end()   ? it->second
                               : extra_it != extra.end() ? extra_it->second
                                                         : -1;
    for (size_t i = 0; i < 2; ++i) {
      const auto single = i < text.size() ? ids_by_text.find(text.substr(i, 1)) : ids_by_text.end();
      encoder.byte_fallback_[b][i] = single != ids_by_text.end() ? single->second : -1;
    }
  }
  return encoder;
}

void BpeEncoder::encode(std::string_view text, const TextIdMap& ids_by_text,
                        std::vector<int32_t>& out) const {
  std::string storage;
  const std::string_view valid = to_valid_utf8(text, storage);
  std::vector<TextSpan> words;
  pre_.split(valid, words);
  Scratch scratch;
  // Text repeats its words, so each distinct word of this call is merged once; later copies
  // take its tokens from where they were first written in `out`.
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;
  for (const TextSpan& span : words) {
    const std::string_view word = valid.substr(span.offset, span.size);
    const auto it = seen.find(word);
    if (it != seen.end()) {
      const auto [begin, end] = it->second;
      for (size_t i = begin; i < end; ++i) {
        const int32_t id = out[i];  // a copy: push_back may move the vector
        out.push_back(id);
      }
      continue;
    }
    const size_t begin = out.size();
    encode_word(word, ids_by_text, scratch, out);
    seen.emplace(word, std::make_pair(begin, out.size()));
  }
}

void BpeEncoder::encode_word(std::string_view word, const TextIdMap& ids_by_text, Scratch& scratch,
                             std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (pre_.ignore_merges()) {
    scratch.encoded.clear();
    for (const char c : word)
      append_utf8(byte_to_codepoint(static_cast<uint8_t>(c)), scratch.encoded);
    const auto it = ids_by_text.find(scratch.encoded);
    if (it != ids_by_text.end()) {
      out.push_back(it->second);
      return;
    }
  }

  // One symbol per byte: each byte is one character of the word's byte-level text.
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  for (size_t i = 0; i < word.size(); ++i) {
    const auto index = static_cast<int32_t>(i);
    symbols.push_back({byte_symbols_[static_cast<unsigned char>(word[i])], index - 1,
                       i + 1 < word.size() ? index + 1 : -1, i, 1});
  }

  std::vector<Bigram>& heap = scratch.heap;
  heap.clear();
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    if (l.id < 0 || r.id < 0) return;
    const Merge merge = merges_.find(l.id, r.id);
    if (merge.rank < 0) return;
    heap.push_back({merge.rank, left, right, merge.result, l.size + r.size});
    std::push_heap(heap.begin(), heap.end(), lower_priority);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const Bigram bigram = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(bigram.left)];
    Symbol& right = symbols[static_cast<size_t>(bigram.right)];
    // Sizes only grow or drop to zero, so an unchanged sum means neither side has merged
    // since this entry was queued.
    if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
    left.id = bigram.result;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& symbol = symbols[static_cast<size_t>(i)];
    if (symbol.id >= 0 && symbol.id < n_vocab_) {
      out.push_back(symbol.id);
      continue;
    }
    for (size_t b = symbol.offset; b < symbol.offset + symbol.size; ++b) {
      for (const int32_t id : byte_fallback_[static_cast<unsigned char>(word[b])]) {
        if (id >= 0) out.push_back(id);
      }
    }
  }
}

}  // namespace strata::model
