#include "model/tokenizer/spm.h"

#include <algorithm>
#include <queue>

namespace strata::model {

namespace {

// A symbol is a byte range of the text, linked to its neighbours; merging grows the left symbol
// over the right one and empties the right one, so indices stay stable.
struct Symbol {
  size_t offset = 0;
  size_t size = 0;  ///< 0 once merged into its left neighbour
  int32_t prev = -1;
  int32_t next = -1;
};

struct Bigram {
  float score = 0.0f;
  int32_t left = 0;
  int32_t right = 0;
  size_t size = 0;  ///< bytes of left + right when queued: detects a stale entry
};

// Highest score first, then leftmost: the order llama.cpp's priority queue pops in.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

// Bytes in the UTF-8 sequence that `lead` starts, read from its high nibble as llama.cpp does:
// a stray continuation byte counts as a one-byte character.
size_t utf8_sequence_length(char lead) {
  static constexpr size_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[static_cast<unsigned char>(lead) >> 4];
}

class Merger {
 public:
  Merger(const SpmTables& tables, std::string_view text) : tables_(tables), text_(text) {}

  void run(std::vector<int32_t>& out) {
    for (size_t offset = 0; offset < text_.size();) {
      const size_t size = std::min(utf8_sequence_length(text_[offset]), text_.size() - offset);
      const auto index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({offset, size, index - 1, -1});
      if (index > 0) symbols_[static_cast<size_t>(index) - 1].next = index;
      offset += size;
    }
    for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) try_add_bigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = at(bigram.left);
      Symbol& right = at(bigram.right);
      // Sizes only grow or drop to zero, so an unchanged sum means neither side has merged
      // since this entry was queued.
      if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) at(right.next).prev = bigram.left;
      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }

    // Every merged symbol is a token by construction (only token texts are queued), so a symbol
    // that is not one is a single character the vocabulary lacks: it falls back to its bytes.
    // llama.cpp's undo-merge step before the byte fallback can therefore never fire.
    for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = at(i).next) {
      const Symbol& symbol = at(i);
      const std::string_view piece = text_.substr(symbol.offset, symbol.size);
      const int32_t id = find(piece);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      for (char byte : piece) {
        const int32_t byte_id = tables_.byte_tokens[static_cast<unsigned char>(byte)];
        if (byte_id >= 0) out.push_back(byte_id);
      }
    }
  }

 private:
  Symbol& at(int32_t index) { return symbols_[static_cast<size_t>(index)]; }

  int32_t find(std::string_view piece) const {
    const auto it = tables_.ids_by_text.find(piece);
    return it == tables_.ids_by_text.end() ? -1 : it->second;
  }

  void try_add_bigram(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t size = at(left).size + at(right).size;
    const int32_t id = find(text_.substr(at(left).offset, size));
    if (id < 0 || static_cast<size_t>(id) >= tables_.scores.size()) return;
    queue_.push({tables_.scores[static_cast<size_t>(id)], left, right, size});
  }

  const SpmTables& tables_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

void spm_tokenize(const SpmTables& tables, std::string_view text, std::vector<int32_t>& out) {
  Merger(tables, text).run(out);
}

}  // namespace strata::model
