#include "model/chat/pystr.h"

#include <locale.h>
#include <wctype.h>

#include <cctype>
#include <cstdint>

#include "model/tokenizer/utf8.h"

namespace strata::model::jinja::pystr {
namespace {

bool is_ws(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

}  // namespace

std::string strip(const std::string& s, const std::string& chars, bool left, bool right) {
  auto drop = [&](unsigned char c) {
    return chars.empty() ? is_ws(c) : chars.find(static_cast<char>(c)) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && drop(static_cast<unsigned char>(s[b]))) ++b;
  }
  if (right) {
    while (e > b && drop(static_cast<unsigned char>(s[e - 1]))) --e;
  }
  return s.substr(b, e - b);
}

namespace {

// Case mapping per code point from the C.UTF-8 locale's tables (glibc ships them), which
// agree with Python's simple case mappings; ASCII only where the locale is missing.
locale_t utf8_locale() {
  static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return loc;
}

uint32_t map_case(uint32_t cp, bool to_upper) {
  if (cp < 0x80 || utf8_locale() == static_cast<locale_t>(nullptr)) {
    if (cp >= 0x80) return cp;
    return static_cast<uint32_t>(to_upper ? std::toupper(static_cast<int>(cp))
                                          : std::tolower(static_cast<int>(cp)));
  }
  const wint_t w = static_cast<wint_t>(cp);
  return static_cast<uint32_t>(to_upper ? towupper_l(w, utf8_locale())
                                        : towlower_l(w, utf8_locale()));
}

bool is_cased(uint32_t cp) {
  return map_case(cp, true) != cp || map_case(cp, false) != cp;
}

// Decodes one UTF-8 character at s[i]; invalid bytes decode as themselves (and stay so).
uint32_t decode(const std::string& s, size_t& i, bool& valid) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  valid = len > 0 && i + len <= s.size();
  for (size_t k = 1; valid && k < len; ++k) valid = (b(i + k) & 0xC0) == 0x80;
  if (!valid) {
    ++i;
    return c;
  }
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (b(i + k) & 0x3F);
  i += len;
  return cp;
}

// Rewrites each character with `f(code point, index among characters)`.
template <typename F>
std::string map_chars(const std::string& s, F f) {
  std::string out;
  out.reserve(s.size());
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    bool valid = true;
    const size_t at = i;
    const uint32_t cp = decode(s, i, valid);
    if (!valid) {
      out += s[at];
    } else {
      append_utf8(f(cp, n), out);
    }
    ++n;
  }
  return out;
}

}  // namespace

std::string upper(const std::string& s) {
  return map_chars(s, [](uint32_t cp, size_t) { return map_case(cp, true); });
}

std::string lower(const std::string& s) {
  return map_chars(s, [](uint32_t cp, size_t) { return map_case(cp, false); });
}

std::string capitalize(const std::string& s) {
  return map_chars(s, [](uint32_t cp, size_t n) { return map_case(cp, n == 0); });
}

std::string title(const std::string& s) {
  bool prev_cased = false;
  return map_chars(s, [&](uint32_t cp, size_t) {
    const bool cased = is_cased(cp);
    const uint32_t out = cased ? map_case(cp, !prev_cased) : cp;
    prev_cased = cased;
    return out;
  });
}

std::string replace(const std::string& s, const std::string& from, const std::string& to,
                    long count) {
  std::string out;
  size_t pos = 0;
  long done = 0;
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    for (size_t i = 0; i <= s.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < s.size()) out += s[i];
    }
    return out;
  }
  while (count < 0 || done < count) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out += s.substr(pos, hit - pos) + to;
    pos = hit + from.size();
    ++done;
  }
  return out + s.substr(pos);
}

std::vector<std::string> split(const std::string& s, bool has_sep, const std::string& sep,
                               long maxsplit) {
  std::vector<std::string> out;
  if (has_sep) {
    size_t pos = 0;
    long done = 0;
    while (maxsplit < 0 || done < maxsplit) {
      const size_t hit = s.find(sep, pos);
      if (hit == std::string::npos) break;
      out.push_back(s.substr(pos, hit - pos));
      pos = hit + sep.size();
      ++done;
    }
    out.push_back(s.substr(pos));
    return out;
  }
  size_t i = 0;
  long done = 0;
  while (i < s.size()) {
    while (i < s.size() && is_ws(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && done >= maxsplit) {
      out.push_back(strip(s.substr(i), "", false, true));
      return out;
    }
    size_t e = i;
    while (e < s.size() && !is_ws(static_cast<unsigned char>(s[e]))) ++e;
    out.push_back(s.substr(i, e - i));
    ++done;
    i = e;
  }
  return out;
}

std::vector<std::string> splitlines(const std::string& s) {
  std::vector<std::string> out;
  std::string line;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      out.push_back(line);
      line.clear();
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      line += s[i];
    }
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace strata::model::jinja::pystr
