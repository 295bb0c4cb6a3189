#include "model/tokenizer/pretokenizer.h"

// pcre2.h declares its API for the code unit width this names: 8 = UTF-8 strings.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "model/tokenizer/utf8.h"

namespace strata::model {

namespace {

// The regex lists of llama.cpp's pre-tokenizer types (llama-vocab.cpp), applied in order.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek's cased-letter class, as its tokenizer.json spells it out (as code points: some of
// its characters have canonical equivalents that an editor may silently substitute).
constexpr std::string_view kDeepseekLetters =
    R"(\s?[)"
    R"(A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF})"
    R"(\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377})"
    R"(\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
    R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA})"
    R"(\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
    R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D})"
    R"(\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})"
    R"(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC})"
    R"(\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113})"
    R"(\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E})"
    R"(\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE})"
    R"(\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06})"
    R"(\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
    R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2})"
    R"(\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943})"
    R"(]+)";
// llama.cpp runs regexes that spell out non-ASCII characters (and name no Unicode category) on
// a copy of the text with every non-ASCII whitespace character turned into U+000B, so such a
// character matches \s but never a literal range that contains it. The ranges below follow:
// whitespace is taken out of the CJK ranges (U+0800..U+4E00 holds U+3000 and others), and
// DeepSeek's punctuation range U+3000..U+3002 starts at U+3001.
constexpr std::string_view kCjk = R"((?:(?!\s)[一-龥ࠀ-一가-퟿])+)";
constexpr std::string_view kDeepseekPunct = R"(\s?[!-/:-~！-／：-～‘-‟、-。]+)";
constexpr std::string_view kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S))";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+)"
    R"([\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDeepseek3 =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|)"
    R"( ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreType {
  std::initializer_list<std::string_view> names;
  std::initializer_list<std::string_view> regexes;
  bool ignore_merges = false;
};

const std::array<PreType, 14>& pre_types() {
  static const std::array<PreType, 14> types = {{
      {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {kLlama3},
       true},
      {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {kLlama3}},
      {{"deepseek-llm"},
       {"[\r\n]", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kCjk, R"(\p{N}+)"}},
      {{"deepseek-coder"}, {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}},
      {{"deepseek-v3"}, {R"(\p{N}{1,3})", "[一-龥぀-ゟ゠-ヿ]+", kDeepseek3}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {{"gpt-2", "mpt", "phi-2", "olmo", "jais", "trillion", "jina-es", "jina-de", "gigachat",
        "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe"},
       {kGpt2}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2}},
      {{"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "hunyuan"}, {kQwen2}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}},
      {{"viking"}, {kPoro, R"(\p{N})"}},
      {{"tekken"}, {kTekken}, true},
      {{"gpt-4o", "llama4"}, {kGpt4o}},
  }};
  return types;
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

// Bytes of the UTF-8 sequence starting at text[pos]; text is valid UTF-8.
size_t char_length(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// "\s" and "\S" written as the Unicode White_Space property, which is what llama.cpp's
// whitespace is. PCRE2's own \s (Unicode separators plus ASCII controls) also takes U+180E
// and leaves out U+0085.
std::string with_unicode_spaces(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
    } else if (pattern[i + 1] == 's' || pattern[i + 1] == 'S') {
      out += pattern[i + 1] == 's' ? "\\p{White_Space}" : "\\P{White_Space}";
      ++i;
    } else {
      out += pattern.substr(i, 2);  // an escape pair, such as an escaped backslash
      ++i;
    }
  }
  return out;
}

}  // namespace

struct PreTokenizer::Regex {
  std::unique_ptr<pcre2_code, CodeDeleter> code;
};

Result<PreTokenizer> PreTokenizer::create(std::string_view pre) {
  for (const PreType& type : pre_types()) {
    bool named = false;
    for (const std::string_view name : type.names) named = named || name == pre;
    if (!named) continue;
    PreTokenizer out;
    out.ignore_merges_ = type.ignore_merges;
    for (const std::string_view written : type.regexes) {
      const std::string pattern = with_unicode_spaces(written);
      int code = 0;
      PCRE2_SIZE where = 0;
      // DOLLAR_ENDONLY: "$" is the end of the word only, as in llama.cpp's std::regex.
      pcre2_code* compiled =
          pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                        PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &code, &where, nullptr);
      if (compiled == nullptr) {
        std::array<PCRE2_UCHAR, 256> message{};
        pcre2_get_error_message(code, message.data(), message.size());
        return error(ErrorCode::kInternal, "pre-tokenizer '" + std::string(pre) +
                                               "': regex does not compile at " +
                                               std::to_string(where) + ": " +
                                               reinterpret_cast<const char*>(message.data()));
      }
      auto regex = std::make_shared<Regex>();
      regex->code.reset(compiled);
      // Without JIT (a build that lacks it) pcre2_match interprets the pattern: slower, same.
      pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE);
      out.regexes_.push_back(std::move(regex));
    }
    return out;
  }
  return error(ErrorCode::kUnsupported, "unknown pre-tokenizer type '" + std::string(pre) + "'");
}

void PreTokenizer::split(std::string_view text, std::vector<TextSpan>& words) const {
  if (text.empty()) return;
  std::vector<TextSpan> current = {{0, text.size()}};
  std::vector<TextSpan> next;
  for (const auto& regex : regexes_) {
    MatchData data(pcre2_match_data_create_from_pattern(regex->code.get(), nullptr));
    next.clear();
    for (const TextSpan& word : current) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + word.offset);
      const std::string_view view = text.substr(word.offset, word.size);
      size_t emitted = 0;  // bytes of the word already in `next`
      size_t start = 0;
      while (start < word.size) {
        const int rc = pcre2_match(regex->code.get(), subject, word.size, start, PCRE2_NO_UTF_CHECK,
                                   data.get(), nullptr);
        // No match, or a matching error (a resource limit): the rest stays one piece.
        if (rc < 0) break;
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
        const size_t begin = ovector[0];
        const size_t end = ovector[1];
        if (end == begin) {
          // An empty match adds no word (llama.cpp's would be an empty, token-less one).
          start = begin + char_length(view, begin);
          continue;
        }
        if (begin > emitted) next.push_back({word.offset + emitted, begin - emitted});
        next.push_back({word.offset + begin, end - begin});
        emitted = end;
        start = end;
      }
      if (emitted < word.size) next.push_back({word.offset + emitted, word.size - emitted});
    }
    current.swap(next);
  }
  words.insert(words.end(), current.begin(), current.end());
}

std::string_view to_valid_utf8(std::string_view text, std::string& storage) {
  bool copying = false;
  std::string encoded;
  for (size_t pos = 0; pos < text.size();) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
    const auto continues = [&](size_t n) {
      if (pos + n > text.size()) return false;
      for (size_t i = 1; i < n; ++i) {
        if ((byte(i) & 0xC0) != 0x80) return false;
      }
      return true;
    };
    // llama.cpp's reading: the lead byte's high bits give the length, the continuation bytes
    // are checked, and overlong forms are accepted (then written canonically).
    const unsigned char lead = byte(0);
    if (lead < 0x80) {
      if (copying) storage += static_cast<char>(lead);
      ++pos;
      continue;
    }
    size_t length = 1;
    uint32_t cpt = 0xFFFD;
    if ((lead & 0x40) == 0) {
      // a stray continuation byte
    } else if ((lead & 0x20) == 0) {
      if (continues(2)) {
        length = 2;
        cpt = (uint32_t{lead} & 0x1F) << 6 | (byte(1) & 0x3F);
      }
    } else if ((lead & 0x10) == 0) {
      if (continues(3)) {
        length = 3;
        cpt = (uint32_t{lead} & 0x0F) << 12 | (uint32_t{byte(1)} & 0x3F) << 6 | (byte(2) & 0x3F);
      }
    } else if ((lead & 0x08) == 0) {
      if (continues(4)) {
        length = 4;
        cpt = (uint32_t{lead} & 0x07) << 18 | (uint32_t{byte(1)} & 0x3F) << 12 |
              (uint32_t{byte(2)} & 0x3F) << 6 | (byte(3) & 0x3F);
      }
    }
    // PCRE2 refuses surrogates and code points past U+10FFFF, which llama.cpp would pass on.
    if ((cpt >= 0xD800 && cpt < 0xE000) || cpt > 0x10FFFF) cpt = 0xFFFD;
    encoded.clear();
    append_utf8(cpt, encoded);
    if (!copying && encoded != text.substr(pos, length)) {
      copying = true;
      storage.assign(text.substr(0, pos));
    }
    if (copying) storage += encoded;
    pos += length;
  }
  return copying ? std::string_view(storage) : text;
}

}  // namespace strata::model
