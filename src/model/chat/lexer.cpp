#include "model/chat/lexer.h"

#include <cctype>
#include <cstring>

#include "model/tokenizer/utf8.h"

namespace strata::model::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

Status syntax_error(int line, const std::string& what) {
  return error(ErrorCode::kMalformed,
               "chat template: syntax error at line " + std::to_string(line) + ": " + what);
}

// jinja2 reads sources with universal newlines and drops one trailing newline
// (keep_trailing_newline=False).
std::string normalize_newlines(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  Result<std::vector<Token>> run() {
    bool line_starting = true;
    bool strip_next = false;  // the previous tag ended with `-`
    while (pos_ < src_.size() || strip_next) {
      size_t start = src_.find('{', pos_);
      while (start != std::string::npos && start + 1 < src_.size() &&
             std::strchr("{%#", src_[start + 1]) == nullptr) {
        start = src_.find('{', start + 1);
      }
      if (start + 1 >= src_.size()) start = std::string::npos;
      std::string text =
          src_.substr(pos_, start == std::string::npos ? std::string::npos : start - pos_);
      if (strip_next) {
        size_t i = 0;
        while (i < text.size() && is_space(text[i])) ++i;
        count_lines(text.substr(0, i));
        pos_ += i;
        text.erase(0, i);
        strip_next = false;
      }
      if (start == std::string::npos) {
        emit_text(text);
        pos_ = src_.size();
        break;
      }
      const char kind = src_[start + 1];
      const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      std::string kept = text;
      if (sign == '-') {
        size_t end = kept.size();
        while (end > 0 && is_space(kept[end - 1])) --end;
        kept.resize(end);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: whitespace between a line's start and a block or comment tag goes.
        const size_t nl = kept.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0 || line_starting) {
          bool blank = l_pos < kept.size();
          for (size_t i = l_pos; i < kept.size(); ++i) blank = blank && is_space(kept[i]);
          if (blank) kept.resize(l_pos);
        }
      }
      emit_text(kept);
      count_lines(text);
      pos_ = start + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        const size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) return syntax_error(line_, "unterminated comment");
        count_lines(src_.substr(pos_, end - pos_));
        const bool minus = end > pos_ && src_[end - 1] == '-';
        const bool plus = end > pos_ && src_[end - 1] == '+';
        pos_ = end + 2;
        line_starting = finish_block_end(minus, plus, /*trim=*/true, strip_next);
        continue;
      }
      const bool block = kind == '%';
      if (block) {
        Result<bool> raw = lex_raw(strip_next);
        if (!raw.ok()) return raw.status();
        if (*raw) {
          line_starting = raw_line_starting_;
          continue;
        }
      }
      tokens_.push_back({block ? TokenType::kBlockBegin : TokenType::kVarBegin, "", line_});
      Result<bool> r = lex_tag(block, strip_next);
      if (!r.ok()) return r.status();
      line_starting = *r;
    }
    tokens_.push_back({TokenType::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({TokenType::kText, text, line_});
  }
  void count_lines(const std::string& s) {
    for (char c : s) line_ += c == '\n';
  }

  // Returns whether the tag's end swallowed a newline (jinja2's `line_starting`).
  bool finish_block_end(bool minus, bool plus, bool trim, bool& strip_next) {
    if (minus) {
      strip_next = true;
      return false;
    }
    if (!plus && trim && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      return true;
    }
    return false;
  }

  Result<bool> lex_tag(bool block, bool& strip_next) {
    int depth = 0;
    const int start_line = line_;
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) {
        return syntax_error(start_line, block ? "unterminated '{%' tag" : "unterminated '{{'");
      }
      const char* end_mark = block ? "%}" : "}}";
      if (depth == 0) {
        const bool minus = src_.compare(pos_, 3, std::string("-") + end_mark) == 0;
        const bool plus = block && src_.compare(pos_, 3, std::string("+") + end_mark) == 0;
        if (minus || plus || src_.compare(pos_, 2, end_mark) == 0) {
          pos_ += (minus || plus) ? 3 : 2;
          tokens_.push_back({block ? TokenType::kBlockEnd : TokenType::kVarEnd, "", line_});
          return finish_block_end(minus, plus, block, strip_next);
        }
      }
      const char c = src_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos_;
        while (e < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_'))
          ++e;
        tokens_.push_back({TokenType::kName, src_.substr(pos_, e - pos_), line_});
        pos_ = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        STRATA_RETURN_IF_ERROR(lex_string(c));
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                     "/",  "%",  "~",  "<",  ">",  "=",  ".", ",", ":",
                                     "|",  "(",  ")",  "[",  "]",  "{",  "}"};
        const char* found = nullptr;
        for (const char* op : kOps) {
          if (src_.compare(pos_, std::strlen(op), op) == 0) {
            found = op;
            break;
          }
        }
        if (found == nullptr) {
          return syntax_error(line_, std::string("unexpected character '") + c + "'");
        }
        if (std::strchr("([{", found[0]) != nullptr && found[1] == '\0') ++depth;
        if (std::strchr(")]}", found[0]) != nullptr && found[1] == '\0' && depth > 0) --depth;
        tokens_.push_back({TokenType::kOp, found, line_});
        pos_ += std::strlen(found);
      }
    }
  }

  // Where a tag `{%[-+] NAME [-]%}` starting at pos_ (after the `{%` and its sign) ends, or
  // npos; `minus` tells whether it closes with `-%}`.
  size_t match_tag(size_t p, const char* name, bool& minus) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    const size_t n = std::strlen(name);
    if (src_.compare(p, n, name) != 0) return std::string::npos;
    p += n;
    if (p < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[p])) || src_[p] == '_')) {
      return std::string::npos;
    }
    while (p < src_.size() && is_space(src_[p])) ++p;
    minus = src_.compare(p, 3, "-%}") == 0;
    const bool plus = src_.compare(p, 3, "+%}") == 0;
    if (minus || plus) return p + 3;
    return src_.compare(p, 2, "%}") == 0 ? p + 2 : std::string::npos;
  }

  // `{% raw %}...{% endraw %}`: the text between is kept as written. Returns false, consuming
  // nothing, when the tag at pos_ is not `raw`. jinja2 applies `-` markers at both tags,
  // lstrip_blocks before `endraw` and trim_blocks after it, but no trim after `raw`.
  Result<bool> lex_raw(bool& strip_next) {
    bool minus = false;
    const size_t body = match_tag(pos_, "raw", minus);
    if (body == std::string::npos) return false;
    const int start_line = line_;
    size_t p = body;
    bool line_starting = false;
    if (minus) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      line_starting = p > body && src_[p - 1] == '\n';
    }
    for (size_t at = src_.find("{%", p); at != std::string::npos; at = src_.find("{%", at + 2)) {
      const char sign = at + 2 < src_.size() ? src_[at + 2] : '\0';
      const size_t name_at = at + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      bool end_minus = false;
      const size_t end = match_tag(name_at, "endraw", end_minus);
      if (end == std::string::npos) continue;
      std::string text = src_.substr(p, at - p);
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        bool blank = l_pos < text.size() && (l_pos > 0 || line_starting);
        for (size_t i = l_pos; blank && i < text.size(); ++i) blank = is_space(text[i]);
        if (blank) text.resize(l_pos);
      }
      emit_text(text);
      count_lines(src_.substr(pos_, end - pos_));
      pos_ = end;
      const bool end_plus = src_[end - 3] == '+';
      raw_line_starting_ = finish_block_end(end_minus, end_plus, /*trim=*/true, strip_next);
      return true;
    }
    return syntax_error(start_line, "missing '{% endraw %}'");
  }

  void lex_number() {
    size_t e = pos_;
    auto digits = [&] {
      while (e < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_'))
        ++e;
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t k = e + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        e = k;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    tokens_.push_back({is_float ? TokenType::kFloat : TokenType::kInt, text, line_});
    pos_ = e;
  }

  Status lex_string(char quote) {
    const int start_line = line_;
    std::string out;
    size_t i = pos_ + 1;
    for (;;) {
      if (i >= src_.size()) return syntax_error(start_line, "unterminated string");
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || i + 1 >= src_.size()) {
        out += c;
        ++i;
        continue;
      }
      const char n = src_[i + 1];
      i += 2;
      switch (n) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '0':
          out += '\0';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case '\n':
          ++line_;
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
          if (i + len > src_.size()) return syntax_error(line_, "truncated escape in string");
          uint32_t cp = 0;
          for (size_t k = 0; k < len; ++k) {
            const char h = src_[i + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) {
              return syntax_error(line_, "bad escape in string");
            }
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                     ? h - '0'
                                                     : (std::tolower(h) - 'a' + 10));
          }
          append_utf8(cp, out);
          i += len;
          break;
        }
        default:
          out += '\\';
          out += n;
          if (n == '\n') ++line_;
      }
    }
    tokens_.push_back({TokenType::kString, out, start_line});
    pos_ = i + 1;
    return Status::ok_status();
  }

  std::string src_;
  size_t pos_ = 0;
  bool raw_line_starting_ = false;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> tokenize(const std::string& source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace strata::model::jinja
