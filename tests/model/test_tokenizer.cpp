// The SPM tokenizer on small hand-built vocabularies, one behaviour per test.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/vocab.h"

namespace strata::model {
namespace {

using Ids = std::vector<int32_t>;

constexpr int32_t kUnk = 0;
constexpr int32_t kBos = 1;
constexpr int32_t kEos = 2;
constexpr int32_t kFirstByte = 3;  // "<0x00>"; byte b is kFirstByte + b

// SentencePiece's layout: <unk>, <s>, </s>, optionally the 256 byte tokens, then `normal`
// tokens in order (ids follow on), each with its score.
Vocab make_vocab(const std::vector<std::pair<std::string, float>>& normal, bool with_bytes = true) {
  Vocab v;
  auto add = [&v](std::string text, float score, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.0f, TokenType::kUnknown);
  add("<s>", 0.0f, TokenType::kControl);
  add("</s>", 0.0f, TokenType::kControl);
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char text[8];
      std::snprintf(text, sizeof text, "<0x%02X>", b);
      add(text, 0.0f, TokenType::kByte);
    }
  }
  for (const auto& [text, score] : normal) add(text, score, TokenType::kNormal);
  v.unk_id = kUnk;
  v.bos_id = kBos;
  v.eos_id = kEos;
  return v;
}

// Id of the normal token `text` in a vocabulary built by make_vocab.
int32_t id_of(const Vocab& v, const std::string& text) {
  for (int32_t i = 0; i < v.size(); ++i) {
    if (v.tokens[static_cast<size_t>(i)] == text) return i;
  }
  ADD_FAILURE() << "no token '" << text << "'";
  return -1;
}

Tokenizer make_tokenizer(Vocab v) {
  Result<Tokenizer> t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

// "▁" (U+2581), SentencePiece's space.
const std::string kSp = "\xe2\x96\x81";

TEST(Tokenizer, HigherScoreMergesFirst) {
  Vocab v = make_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -5}, {"bc", -2}});
  v.add_space_prefix = false;
  const Ids expected = {id_of(v, "a"), id_of(v, "bc")};
  EXPECT_EQ(make_tokenizer(v).encode("abc", false), expected);
}

TEST(Tokenizer, EqualScoresMergeLeftmostFirst) {
  Vocab v = make_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -2}, {"aa", -3}});
  v.add_space_prefix = false;
  const Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("abc", false), (Ids{id_of(v, "ab"), id_of(v, "c")}));
  EXPECT_EQ(t.encode("aaa", false), (Ids{id_of(v, "aa"), id_of(v, "a")}));
}

TEST(Tokenizer, MergesChainOnlyThroughTokens) {
  Vocab v = make_vocab({{"a", -1},
                        {"b", -1},
                        {"c", -1},
                        {"ab", -3},
                        {"abc", -4},
                        {"xyz", -1},
                        {"x", -1},
                        {"y", -1},
                        {"z", -1}});
  v.add_space_prefix = false;
  const Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("abc", false), (Ids{id_of(v, "abc")}));
  // "xyz" is a token but neither "xy" nor "yz" is, so no merge can reach it.
  EXPECT_EQ(t.encode("xyz", false), (Ids{id_of(v, "x"), id_of(v, "y"), id_of(v, "z")}));
}

TEST(Tokenizer, SpacePrefixAndEscapedSpaces) {
  Vocab v = make_vocab({{kSp, -1}, {"a", -1}, {"b", -1}, {kSp + "a", -2}, {kSp + "b", -2}});
  const Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("a b", false), (Ids{id_of(v, kSp + "a"), id_of(v, kSp + "b")}));
  EXPECT_EQ(t.encode("a b", true), (Ids{kBos, id_of(v, kSp + "a"), id_of(v, kSp + "b")}));
  EXPECT_EQ(t.encode(" a", false), (Ids{id_of(v, kSp), id_of(v, kSp + "a")}));

  v.add_space_prefix = false;
  EXPECT_EQ(make_tokenizer(v).encode("a b", false), (Ids{id_of(v, "a"), id_of(v, kSp + "b")}));
}

TEST(Tokenizer, EmptyText) {
  const Tokenizer t = make_tokenizer(make_vocab({{"a", -1}}));
  EXPECT_EQ(t.encode("", false), Ids{});
  EXPECT_EQ(t.encode("", true), Ids{kBos});
  EXPECT_EQ(t.decode(Ids{}, true), "");
}

TEST(Tokenizer, AddEosWhenTheVocabularyAsks) {
  Vocab v = make_vocab({{"a", -1}});
  v.add_space_prefix = false;
  v.add_bos = false;
  v.add_eos = true;
  const Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("a", true), (Ids{id_of(v, "a"), kEos}));
  EXPECT_EQ(t.encode("a", false), (Ids{id_of(v, "a")}));
}

TEST(Tokenizer, UnknownCharactersFallBackToBytes) {
  Vocab v = make_vocab({{"a", -1}});
  v.add_space_prefix = false;
  const Tokenizer t = make_tokenizer(v);
  // "é" is C3 A9; a lone continuation byte and a truncated sequence are bytes as well.
  EXPECT_EQ(t.encode("a\xc3\xa9", false),
            (Ids{id_of(v, "a"), kFirstByte + 0xC3, kFirstByte + 0xA9}));
  EXPECT_EQ(t.encode("\x80"
                     "a\xe6",
                     false),
            (Ids{kFirstByte + 0x80, id_of(v, "a"), kFirstByte + 0xE6}));
  EXPECT_EQ(t.decode(t.encode("a\xc3\xa9", false), false), "a\xc3\xa9");
}

TEST(Tokenizer, WithoutByteTokensUnknownBytesBecomeUnk) {
  Vocab v = make_vocab({{"a", -1}}, /*with_bytes=*/false);
  v.add_space_prefix = false;
  const Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("\xc3\xa9"
                     "a",
                     false),
            (Ids{kUnk, kUnk, id_of(v, "a")}));
  EXPECT_EQ(t.decode(Ids{kUnk}, false), "");
  EXPECT_EQ(t.decode(Ids{kUnk}, false, /*render_special=*/true), "<unk>");
}

TEST(Tokenizer, SingleByteTokensServeAsFallback) {
  // Vocabularies without "<0xNN>" may hold the raw byte itself, which llama.cpp also accepts.
  Vocab v = make_vocab({{"a", -1}, {"\xc3", -1}}, /*with_bytes=*/false);
  v.add_space_prefix = false;
  const Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.encode("\xc3\xa9", false), (Ids{id_of(v, "\xc3"), kUnk}));
}

TEST(Tokenizer, ParseSpecialSplitsControlTokens) {
  Vocab v = make_vocab({{kSp, -1}, {"a", -1}, {"b", -1}, {kSp + "a", -2}, {kSp + "b", -2}});
  const Tokenizer t = make_tokenizer(v);
  const int32_t sa = id_of(v, kSp + "a");
  const int32_t sb = id_of(v, kSp + "b");
  // Text after a special token starts a new fragment and gets its own space prefix.
  EXPECT_EQ(t.encode("a</s>b", false, true), (Ids{sa, kEos, sb}));
  EXPECT_EQ(t.encode("<s>a", true, true), (Ids{kBos, kBos, sa}));
  EXPECT_EQ(t.encode("</s></s>", false, true), (Ids{kEos, kEos}));
  EXPECT_EQ(t.encode("<unk>", false, true), (Ids{kUnk}));

  // Without parse_special the same text is plain characters, here all byte fallbacks.
  const Ids plain = t.encode("a</s>", false, false);
  const Ids expected = {sa, kFirstByte + '<', kFirstByte + '/', kFirstByte + 's', kFirstByte + '>'};
  EXPECT_EQ(plain, expected);
}

TEST(Tokenizer, UserDefinedTokensAreAlwaysSplit) {
  Vocab v = make_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -2}, {"<tag>", 0}, {"<tag>x", 0}});
  v.types[static_cast<size_t>(id_of(v, "<tag>"))] = TokenType::kUserDefined;
  v.types[static_cast<size_t>(id_of(v, "<tag>x"))] = TokenType::kUserDefined;
  const Tokenizer t = make_tokenizer(v);
  const int32_t tag = id_of(v, "<tag>");
  const int32_t tagx = id_of(v, "<tag>x");
  // The longer text is matched first.
  EXPECT_EQ(t.encode("<tag>x<tag>a", false), (Ids{tagx, tag, id_of(v, kSp + "a")}));
  EXPECT_EQ(t.decode(Ids{tagx, tag}, false), "<tag>x<tag>");
}

TEST(Tokenizer, PiecesOfEachTokenType) {
  Vocab v = make_vocab({{kSp + "hi" + kSp, -1}, {"unused", -1}});
  v.types[static_cast<size_t>(id_of(v, "unused"))] = TokenType::kUnused;
  const Tokenizer t = make_tokenizer(v);
  EXPECT_EQ(t.token_to_piece(id_of(v, kSp + "hi" + kSp)), " hi ");
  EXPECT_EQ(t.token_to_piece(kFirstByte + 0x0A), "\n");
  EXPECT_EQ(t.token_to_piece(kFirstByte + 0xFF), "\xff");
  EXPECT_EQ(t.token_to_piece(kBos), "");
  EXPECT_EQ(t.token_to_piece(kBos, /*render_special=*/true), "<s>");
  EXPECT_EQ(t.token_to_piece(id_of(v, "unused")), "");
  EXPECT_EQ(t.token_to_piece(-1), "");
  EXPECT_EQ(t.token_to_piece(t.n_vocab()), "");
}

TEST(Tokenizer, DecodeStripsOnlyTheFirstPiecesSpace) {
  Vocab v = make_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -2}});
  const Tokenizer t = make_tokenizer(v);
  const int32_t sa = id_of(v, kSp + "a");
  EXPECT_EQ(t.decode(Ids{sa, sa}, false), " a a");
  EXPECT_EQ(t.decode(Ids{sa, sa}, true), "a a");
  // A leading BOS takes the strip, as in llama.cpp, so the space stays.
  EXPECT_EQ(t.decode(Ids{kBos, sa}, true), " a");
  EXPECT_EQ(t.decode(Ids{kBos, sa}, false, /*render_special=*/true), "<s> a");

  for (const std::string s : {"a", " a", "  a a  ", "a\xc3\xa9 \xf0\x9f\x99\x82", ""}) {
    EXPECT_EQ(t.decode(t.encode(s, false), true), s) << s;
  }

  v.add_space_prefix = false;
  EXPECT_EQ(make_tokenizer(v).decode(Ids{sa}, true), " a");
}

TEST(Tokenizer, EndOfGeneration) {
  Vocab v = make_vocab({{"a", -1}, {"<|end|>", 0}});
  v.eot_id = id_of(v, "a");
  v.eog_ids = {id_of(v, "<|end|>")};
  const Tokenizer t = make_tokenizer(v);
  EXPECT_TRUE(t.is_eog(kEos));
  EXPECT_TRUE(t.is_eog(id_of(v, "a")));
  EXPECT_TRUE(t.is_eog(id_of(v, "<|end|>")));
  EXPECT_FALSE(t.is_eog(kBos));
  EXPECT_FALSE(t.is_eog(-1));
  EXPECT_EQ(t.bos_id(), kBos);
  EXPECT_EQ(t.eos_id(), kEos);
  EXPECT_EQ(t.n_vocab(), v.size());
}

TEST(Tokenizer, DuplicateTextsResolveToTheLastId) {
  Vocab v = make_vocab({{"a", -1}, {"a", -1}});
  v.add_space_prefix = false;
  EXPECT_EQ(make_tokenizer(v).encode("a", false), (Ids{v.size() - 1}));
}

TEST(Vocab, ValidateRejectsInconsistentVocabularies) {
  const Vocab good = make_vocab({{"a", -1}});
  EXPECT_TRUE(good.validate().ok());

  Vocab v = good;
  v.scores.pop_back();
  EXPECT_EQ(v.validate().code(), ErrorCode::kMalformed);

  v = good;
  v.types.push_back(TokenType::kNormal);
  EXPECT_EQ(v.validate().code(), ErrorCode::kMalformed);

  v = good;
  v.eos_id = v.size();
  EXPECT_EQ(v.validate().code(), ErrorCode::kMalformed);
  EXPECT_NE(v.validate().message().find("EOS"), std::string::npos) << v.validate().message();

  v = good;
  v.bos_id = -1;
  EXPECT_EQ(v.validate().code(), ErrorCode::kMalformed);  // add_bos needs a BOS
  v.add_bos = false;
  EXPECT_TRUE(v.validate().ok());

  v = good;
  v.types[0] = static_cast<TokenType>(7);
  EXPECT_EQ(v.validate().code(), ErrorCode::kMalformed);

  v = good;
  v.eog_ids = {-1};
  EXPECT_EQ(v.validate().code(), ErrorCode::kMalformed);

  EXPECT_EQ(Vocab{}.validate().code(), ErrorCode::kMalformed);
  EXPECT_EQ(Tokenizer::create(Vocab{}).status().code(), ErrorCode::kMalformed);
}

}  // namespace
}  // namespace strata::model
