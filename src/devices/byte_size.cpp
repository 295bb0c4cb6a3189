#include "devices/byte_size.h"

#include <cctype>
#include <string>

namespace strata::devices {

Result<size_t> parse_byte_size(std::string_view text) {
  auto bad = [&](const char* why) {
    return error(ErrorCode::kInvalidArgument, "bad size '" + std::string(text) + "': " + why);
  };
  size_t i = 0;
  size_t value = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const size_t digit = static_cast<size_t>(text[i] - '0');
    if (value > (SIZE_MAX - digit) / 10) return bad("too large");
    value = value * 10 + digit;
  }
  if (i == 0) return bad("expected a whole number with an optional K, M, G or T suffix");

  std::string unit;
  for (; i < text.size(); ++i)
    unit += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  int shift = 0;
  if (!unit.empty() && unit != "B") {
    const std::string_view prefixes = "KMGT";
    const size_t p = prefixes.find(unit[0]);
    const std::string rest = unit.substr(1);
    if (p == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "IB")) {
      return bad("expected a whole number with an optional K, M, G or T suffix");
    }
    shift = 10 * static_cast<int>(p + 1);
  }
  if (shift > 0 && value > (SIZE_MAX >> shift)) return bad("too large");
  return value << shift;
}

}  // namespace strata::devices
