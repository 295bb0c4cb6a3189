// Turns generated token pieces into text a client may be sent: whole UTF-8 characters only,
// and nothing that might be the start of a stop string until it is known not to be.
#pragma once

#include <string>
#include <vector>

namespace strata::serve {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop) : stop_(std::move(stop)) {}

  /// Appends a token's bytes; returns true once a stop string has appeared (the text then
  /// ends before it).
  bool add(const std::string& piece);
  /// Text not sent yet that is safe to send now; `final` releases everything left.
  std::string take(bool final);
  const std::string& text() const { return text_; }
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stop_;
  std::string text_;
  size_t sent_ = 0;
  bool stopped_ = false;
};

}  // namespace strata::serve
