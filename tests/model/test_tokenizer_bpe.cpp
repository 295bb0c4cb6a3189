// The byte-level BPE tokenizer on small hand-built vocabularies, and its pre-tokenizers.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/tokenizer/bpe.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "model/tokenizer/vocab.h"

namespace strata::model {
namespace {

using Ids = std::vector<int32_t>;
using Words = std::vector<std::string>;

// The byte-level text of `bytes`: each byte written as its alphabet character.
std::string byte_level(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) append_utf8(byte_to_codepoint(static_cast<uint8_t>(c)), out);
  return out;
}

// A BPE vocabulary: the 256 single-byte characters (ids 0..255, by byte), then `extra` tokens
// (written in plain bytes here, stored byte-level), then `merges` (plain bytes, "left right").
Vocab make_vocab(const std::vector<std::string>& extra,
                 const std::vector<std::pair<std::string, std::string>>& merges,
                 std::string_view pre = "gpt-2") {
  Vocab v;
  v.model = TokenizerModel::kBpe;
  v.pre = std::string(pre);
  for (int b = 0; b < 256; ++b)
    v.tokens.push_back(byte_level(std::string(1, static_cast<char>(b))));
  for (const std::string& text : extra) v.tokens.push_back(byte_level(text));
  for (const auto& [left, right] : merges) {
    v.merges.push_back(byte_level(left) + " " + byte_level(right));
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  v.add_bos = false;
  v.add_space_prefix = false;
  return v;
}

Tokenizer make_tokenizer(Vocab v) {
  Result<Tokenizer> t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

Words split(std::string_view pre, std::string_view text) {
  Result<PreTokenizer> p = PreTokenizer::create(pre);
  EXPECT_TRUE(p.ok()) << p.status().message();
  std::vector<TextSpan> spans;
  p->split(text, spans);
  Words words;
  for (const TextSpan& s : spans) words.emplace_back(text.substr(s.offset, s.size));
  return words;
}

TEST(ByteLevel, PrintableBytesStandForThemselvesAndTheRestFollow256) {
  EXPECT_EQ(byte_to_codepoint('a'), uint32_t{'a'});
  EXPECT_EQ(byte_to_codepoint('!'), uint32_t{'!'});
  EXPECT_EQ(byte_to_codepoint(0xA1), 0xA1u);
  EXPECT_EQ(byte_to_codepoint(0), 0x100u);
  EXPECT_EQ(byte_to_codepoint(' '), 0x120u);   // "Ġ"
  EXPECT_EQ(byte_to_codepoint('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(byte_to_codepoint(0xAD), 0x143u);  // the last one
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(decode_byte_level(byte_level(all)), all);
  // Characters outside the alphabet pass through.
  EXPECT_EQ(decode_byte_level("\xe4\xbd\xa0"), "\xe4\xbd\xa0");
}

TEST(PreTokenizer, Gpt2SplitsContractionsWordsNumbersAndSpaces) {
  EXPECT_EQ(split("gpt-2", "Hello world's  42x!!\n"),
            (Words{"Hello", " world", "'s", " ", " 42", "x", "!!", "\n"}));
  // Every byte lands in some word, matched or not.
  EXPECT_EQ(split("gpt-2", "a\nb"), (Words{"a", "\n", "b"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndKeepsNewlines) {
  EXPECT_EQ(split("llama-bpe", "1234567 ok\n\n  x"),
            (Words{"123", "456", "7", " ok", "\n\n", " ", " x"}));
  EXPECT_EQ(split("qwen2", "12 ab"), (Words{"1", "2", " ab"}));
}

TEST(PreTokenizer, RegexesApplyInTurn) {
  // starcoder first isolates every digit, then runs GPT-2's regex inside each piece.
  EXPECT_EQ(split("starcoder", "ab 123"), (Words{"ab", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, UsesUnicodeProperties) {
  // \p{L} covers Cyrillic and CJK; \p{N} Arabic-Indic digits.
  EXPECT_EQ(split("gpt-2", "\xd0\xbf\xd1\x80\xd0\xb8 \xd9\xa3\xd9\xa4"),
            (Words{"\xd0\xbf\xd1\x80\xd0\xb8", " \xd9\xa3\xd9\xa4"}));
}

TEST(PreTokenizer, WhitespaceIsTheUnicodeWhiteSpaceProperty) {
  // U+0085 is whitespace and U+180E is not, as in llama.cpp (PCRE2's own \s has it the other
  // way round).
  EXPECT_EQ(split("gpt-2",
                  "a\xc2\x85\xc2\x85"
                  "b"),
            (Words{"a", "\xc2\x85", "\xc2\x85", "b"}));
  EXPECT_EQ(split("gpt-2", "\n\n\xe1\xa0\x8eX"), (Words{"\n", "\n", "\xe1\xa0\x8e", "X"}));
}

TEST(PreTokenizer, NonAsciiWhitespaceMatchesNoLiteralRange) {
  // U+3000 lies in DeepSeek's punctuation and CJK ranges, but llama.cpp sees it as whitespace
  // only: it joins "、" through "\s?", and the CJK regex then cuts it off again.
  EXPECT_EQ(split("deepseek-llm", "    \xe3\x80\x80\xe3\x80\x81\xe3\x80\x8e"),
            (Words{"    ", "\xe3\x80\x80", "\xe3\x80\x81", "\xe3\x80\x8e"}));
}

TEST(PreTokenizer, UnknownTypeIsUnsupported) {
  const Result<PreTokenizer> p = PreTokenizer::create("no-such-thing");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(p.status().message(), "unknown pre-tokenizer type 'no-such-thing'");
  Vocab v = make_vocab({}, {{"a", "b"}}, "no-such-thing");
  EXPECT_EQ(Tokenizer::create(std::move(v)).status().code(), ErrorCode::kUnsupported);
}

TEST(ValidUtf8, InvalidBytesBecomeReplacementCharacters) {
  std::string storage;
  const std::string_view valid = "h\xc3\xa9llo \xf0\x9f\x98\x80";
  EXPECT_EQ(to_valid_utf8(valid, storage).data(), valid.data());  // no copy
  EXPECT_EQ(to_valid_utf8("a\xff"
                          "b",
                          storage),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(to_valid_utf8("\xc3", storage), "\xef\xbf\xbd");  // truncated
  EXPECT_EQ(to_valid_utf8("\x80\x80", storage), "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(BpeTokenizer, MergesByRankNotByLength) {
  // "ab" ranks before "bc", so "abc" is "ab" + "c" even though "bc" exists.
  const Vocab v = make_vocab({"ab", "bc", "abc"}, {{"a", "b"}, {"b", "c"}, {"ab", "c"}});
  Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("abc", false), (Ids{258}));
  EXPECT_EQ(t.encode("bc", false), (Ids{257}));
  // "bc" ranks first when "ab" comes after it.
  const Vocab w = make_vocab({"ab", "bc"}, {{"b", "c"}, {"a", "b"}});
  EXPECT_EQ(make_tokenizer(w).encode("abc", false), (Ids{'a', 257}));
}

TEST(BpeTokenizer, MergesStayInsideWordsAndDecodeBack) {
  const Vocab v = make_vocab({" a", "aa"}, {{" ", "a"}, {"a", "a"}});
  Tokenizer t = make_tokenizer(v);
  // The words are "aa", " a", " ", " a"; merges never cross them.
  const Ids ids = t.encode("aa a  a", false);
  EXPECT_EQ(ids, (Ids{257, 256, ' ', 256}));
  EXPECT_EQ(t.decode(ids, true), "aa a  a");
  EXPECT_EQ(t.token_to_piece(256), " a");
}

TEST(BpeTokenizer, Llama3TakesWholeWordTokensWithoutMerging) {
  // "abc" is a token no merge leads to; "ab" is a merge whose text is no token, so its bytes
  // fall back to their single-byte tokens.
  const Vocab bpe = make_vocab({"abc"}, {{"a", "b"}}, "gpt-2");
  EXPECT_EQ(make_tokenizer(bpe).encode("abc", false), (Ids{'a', 'b', 'c'}));
  const Vocab llama3 = make_vocab({"abc"}, {{"a", "b"}}, "llama-bpe");
  EXPECT_EQ(make_tokenizer(llama3).encode("abc", false), (Ids{256}));
  EXPECT_EQ(make_tokenizer(llama3).encode("abcd", false), (Ids{'a', 'b', 'c', 'd'}));
}

TEST(BpeTokenizer, SpecialTokensAreMatchedBeforePreTokenizing) {
  Vocab v = make_vocab({"ab"}, {{"a", "b"}});
  v.tokens.push_back("<|end|>");
  v.scores.push_back(0.0f);
  v.types.push_back(TokenType::kControl);
  v.tokens.push_back("<tag>");
  v.scores.push_back(0.0f);
  v.types.push_back(TokenType::kUserDefined);
  Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("ab<|end|>ab", false, true), (Ids{256, 257, 256}));
  EXPECT_EQ(t.encode("ab<tag>ab", false, false), (Ids{256, 258, 256}));
  EXPECT_EQ(t.decode(Ids{256, 257, 258}, false), "ab<tag>");
}

TEST(BpeTokenizer, InvalidUtf8IsReadAsReplacementCharacter) {
  Tokenizer t = make_tokenizer(make_vocab({}, {{"a", "b"}}));
  const Ids ids = t.encode("\xff", false);
  EXPECT_EQ(t.decode(ids, false), "\xef\xbf\xbd");
}

TEST(BpeVocab, NeedsMerges) {
  Vocab v = make_vocab({}, {});
  const Status st = v.validate();
  EXPECT_EQ(st.code(), ErrorCode::kMalformed);
  EXPECT_NE(st.message().find("no merges"), std::string::npos) << st.message();
}

TEST(BpeVocab, MergeWithoutSpaceIsMalformed) {
  Vocab v = make_vocab({}, {{"a", "b"}});
  v.merges.push_back("ab");
  const Result<Tokenizer> t = Tokenizer::create(std::move(v));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(t.status().message().find("tokenizer.ggml.merges[1]"), std::string::npos);
}

}  // namespace
}  // namespace strata::model
