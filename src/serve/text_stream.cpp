#include "serve/text_stream.h"

#include <algorithm>

namespace strata::serve {
namespace {

// Length of the longest prefix of `s` that ends on a whole UTF-8 character.
size_t whole_utf8(const std::string& s, size_t from) {
  size_t end = s.size();
  // Step back over at most 3 continuation bytes to the last lead byte.
  size_t i = end;
  int back = 0;
  while (i > from && back < 4) {
    --i;
    ++back;
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    return back >= len ? end : i;
  }
  return end;
}

}  // namespace

bool TextStream::add(const std::string& piece) {
  if (stopped_) return true;
  const size_t before = text_.size();
  text_ += piece;
  for (const std::string& s : stop_) {
    // A stop string may start in earlier text and end in this piece.
    const size_t from = before >= s.size() ? before - s.size() + 1 : 0;
    const size_t at = text_.find(s, from);
    if (at != std::string::npos) {
      text_.resize(at);
      stopped_ = true;
    }
  }
  return stopped_;
}

std::string TextStream::take(bool final) {
  size_t end = text_.size();
  if (!final && !stopped_) {
    // Hold back a tail that could still grow into a stop string.
    for (const std::string& s : stop_) {
      for (size_t k = std::min(s.size() - 1, text_.size()); k > 0; --k) {
        if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
          end = std::min(end, text_.size() - k);
          break;
        }
      }
    }
    end = std::min(end, whole_utf8(text_.substr(0, end), sent_));
  }
  if (end <= sent_) return {};
  std::string out = text_.substr(sent_, end - sent_);
  sent_ = end;
  return out;
}

}  // namespace strata::serve
