#include "model/chat/pystr.h"

#include <cctype>

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

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string capitalize(const std::string& s) {
  std::string out = lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) {
      c = static_cast<char>(prev_cased ? std::tolower(u) : std::toupper(u));
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return out;
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
