// Every structural problem is a Malformed error whose message names it; none may crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/test_util.h"

namespace strata::gguf {
namespace {

using testing::open_error;
using testing::RawBuilder;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;
constexpr uint64_t kHuge = uint64_t{1} << 60;

// One tensor entry, then the padding and `data_bytes` of tensor data.
std::vector<uint8_t> one_tensor(const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset,
                                size_t data_bytes) {
  return RawBuilder().header(1, 0).tensor("w", ne, type, offset).pad().zeros(data_bytes).data();
}

TEST(CorruptTest, ValidBaselineOpens) {
  EXPECT_EQ(open_error(one_tensor({8}, kF32, 0, 32)), "ok");
  EXPECT_EQ(open_error(RawBuilder().header(0, 0).data()), "ok");
  EXPECT_EQ(open_error(RawBuilder().header(0, 0, 2).data()), "ok");
}

TEST(CorruptTest, BadMagic) {
  const std::string m = open_error(RawBuilder().bytes("GGML").u32(3).u64(0).u64(0).data());
  EXPECT_MENTIONS("bad magic 47 47 4d 4c", m);
  EXPECT_MENTIONS("not a GGUF file", m);
}

TEST(CorruptTest, UnsupportedVersion) {
  EXPECT_MENTIONS("gguf: unsupported GGUF version 1",
                  open_error(RawBuilder().header(0, 0, 1).data()));
  EXPECT_MENTIONS("unsupported GGUF version 4", open_error(RawBuilder().header(0, 0, 4).data()));
  EXPECT_MENTIONS("big-endian", open_error(RawBuilder().header(0, 0, 3u << 24).data()));
}

TEST(CorruptTest, TooSmall) {
  EXPECT_MENTIONS("gguf: file too small", open_error({}));
  EXPECT_MENTIONS("file too small", open_error({'G', 'G', 'U'}));
  EXPECT_MENTIONS("file too small", open_error(RawBuilder().bytes("GGUF").u32(3).data()));
  auto null = File::from_memory(nullptr, 100);
  ASSERT_FALSE(null.ok());
  EXPECT_MENTIONS("file too small", null.status().message());
}

TEST(CorruptTest, HugeCounts) {
  EXPECT_MENTIONS("tensor count 1152921504606846976 cannot fit",
                  open_error(RawBuilder().header(kHuge, 0).zeros(100).data()));
  EXPECT_MENTIONS("metadata count 1152921504606846976 cannot fit",
                  open_error(RawBuilder().header(0, kHuge).zeros(100).data()));
  EXPECT_MENTIONS("tensor count 18446744073709551615",
                  open_error(RawBuilder().header(~uint64_t{0}, ~uint64_t{0}).data()));
}

TEST(CorruptTest, StringLengthPastTheEnd) {
  EXPECT_MENTIONS("key of metadata entry 0: string length 1000 runs past the end",
                  open_error(RawBuilder().header(0, 1).u64(1000).bytes("abcdefgh").data()));
  const std::string m =
      open_error(RawBuilder().header(0, 1).str("k").u32(8).u64(kHuge).bytes("x").data());
  EXPECT_MENTIONS("metadata 'k': string length 1152921504606846976 runs past the end", m);
  EXPECT_MENTIONS("string length",
                  open_error(RawBuilder().header(1, 0).u64(kHuge).bytes("w").zeros(40).data()));
}

TEST(CorruptTest, ArrayCountPastTheEnd) {
  EXPECT_MENTIONS("metadata 'a' has an array of 1152921504606846976 u32 items, which cannot fit",
                  open_error(RawBuilder().header(0, 1).str("a").u32(9).u32(4).u64(kHuge).data()));
  EXPECT_MENTIONS(
      "array of 3 string items",
      open_error(RawBuilder().header(0, 1).str("a").u32(9).u32(8).u64(3).zeros(20).data()));
  // Fits the per-item minimum but the file still ends early.
  EXPECT_MENTIONS(
      "unexpected end of file reading metadata 'a'",
      open_error(RawBuilder().header(0, 1).str("a").u32(9).u32(8).u64(2).str("x").zeros(7).data()));
}

TEST(CorruptTest, UnknownValueTypes) {
  EXPECT_MENTIONS("metadata 'k' has unknown value type 13",
                  open_error(RawBuilder().header(0, 1).str("k").u32(13).u32(0).data()));
  EXPECT_MENTIONS("metadata 'k' has an array of unknown value type 99",
                  open_error(RawBuilder().header(0, 1).str("k").u32(9).u32(99).u64(0).data()));
  EXPECT_MENTIONS("invalid bool byte 2",
                  open_error(RawBuilder().header(0, 1).str("k").u32(7).u8(2).data()));
}

TEST(CorruptTest, ArrayNestingDepth) {
  const auto nested = [](int levels) {
    RawBuilder b;
    b.header(0, 1).str("deep");
    b.u32(9);                                          // the entry's type: array
    for (int i = 1; i < levels; ++i) b.u32(9).u64(1);  // element type array, one item
    b.u32(4).u64(1).u32(7);                            // innermost: one u32
    return b.data();
  };
  EXPECT_EQ(open_error(nested(64)), "ok");
  EXPECT_MENTIONS("metadata 'deep' has arrays nested deeper than 64 levels",
                  open_error(nested(65)));
  EXPECT_MENTIONS("nested deeper", open_error(nested(100000)));
}

TEST(CorruptTest, DuplicateAndEmptyKeys) {
  EXPECT_MENTIONS("duplicate metadata key 'k'",
                  open_error(RawBuilder().header(0, 2).kv_u32("k", 1).kv_u32("k", 2).data()));
  EXPECT_MENTIONS("metadata entry 0 has an empty key",
                  open_error(RawBuilder().header(0, 1).kv_u32("", 1).data()));
}

TEST(CorruptTest, BadAlignment) {
  EXPECT_MENTIONS("general.alignment 48 is not a power of two",
                  open_error(RawBuilder().header(0, 1).kv_u32("general.alignment", 48).data()));
  EXPECT_MENTIONS("general.alignment 0 is not a power of two",
                  open_error(RawBuilder().header(0, 1).kv_u32("general.alignment", 0).data()));
  EXPECT_MENTIONS(
      "general.alignment must be a u32, not a string",
      open_error(RawBuilder().header(0, 1).kv_string("general.alignment", "32").data()));
}

TEST(CorruptTest, TensorOffsetPastTheEnd) {
  const std::string m = open_error(one_tensor({8}, kF32, 4096, 32));
  EXPECT_MENTIONS("tensor 'w' data offset 4096", m);
  EXPECT_MENTIONS("past the end of the file", m);
  EXPECT_MENTIONS("past the end",
                  open_error(one_tensor({8}, kF32, ~uint64_t{0} & ~uint64_t{31}, 32)));
}

TEST(CorruptTest, TensorSizePastTheEnd) {
  // Header 24 + entry (8 + 1 + 4 + 8 + 4 + 8 = 33) = 57, so the data section starts at 64.
  const std::vector<uint8_t> bytes = one_tensor({64}, kF32, 0, 32);
  ASSERT_EQ(bytes.size(), 96u);
  EXPECT_MENTIONS(
      "gguf: tensor 'w' data [offset 64, size 256] extends past the end of the file (96 bytes)",
      open_error(bytes));
  // No data section at all.
  EXPECT_MENTIONS("past the end",
                  open_error(RawBuilder().header(1, 0).tensor("w", {8}, kF32, 0).data()));
}

TEST(CorruptTest, OverlappingTensors) {
  const std::vector<uint8_t> bytes = RawBuilder()
                                         .header(2, 0)
                                         .tensor("a", {16}, kF32, 0)
                                         .tensor("b", {8}, kF32, 32)
                                         .pad()
                                         .zeros(128)
                                         .data();
  EXPECT_MENTIONS("tensors 'a' [offset 96, size 64] and 'b' [offset 128, size 32] overlap",
                  open_error(bytes));
  // Same offset, listed out of order; an empty tensor overlaps nothing.
  EXPECT_MENTIONS("overlap", open_error(RawBuilder()
                                            .header(3, 0)
                                            .tensor("c", {8}, kF32, 64)
                                            .tensor("d", {0}, kF32, 64)
                                            .tensor("e", {8}, kF32, 64)
                                            .pad()
                                            .zeros(128)
                                            .data()));
  EXPECT_EQ(open_error(RawBuilder()
                           .header(2, 0)
                           .tensor("c", {8}, kF32, 32)
                           .tensor("d", {0}, kF32, 32)
                           .pad()
                           .zeros(64)
                           .data()),
            "ok");
}

TEST(CorruptTest, UnknownTypeId) {
  EXPECT_MENTIONS("tensor 'w' has unknown type id 4", open_error(one_tensor({8}, 4, 0, 32)));
  EXPECT_MENTIONS("unknown type id 4294967295", open_error(one_tensor({8}, ~0u, 0, 32)));
}

TEST(CorruptTest, DimensionProductOverflow) {
  EXPECT_MENTIONS("tensor 'w' element count overflows int64 (shape [4294967296, 4294967296])",
                  open_error(one_tensor({1ull << 32, 1ull << 32}, kF32, 0, 32)));
  EXPECT_MENTIONS("byte size overflows", open_error(one_tensor({1ull << 62}, 28, 0, 32)));
  EXPECT_MENTIONS("tensor 'w' dimension 1 is negative (-1)",
                  open_error(one_tensor({8, ~uint64_t{0}}, kF32, 0, 32)));
}

TEST(CorruptTest, DimensionCount) {
  EXPECT_MENTIONS("tensor 'w' has 5 dimensions (1 to 4 are supported)",
                  open_error(one_tensor({1, 1, 1, 1, 1}, kF32, 0, 32)));
  EXPECT_MENTIONS("has 0 dimensions", open_error(one_tensor({}, kF32, 0, 32)));
}

TEST(CorruptTest, RowLengthNotAMultipleOfTheBlockSize) {
  EXPECT_MENTIONS("tensor 'w' row length 33 is not a multiple of the q8_0 block size 32",
                  open_error(one_tensor({33}, kQ8_0, 0, 64)));
}

TEST(CorruptTest, MisalignedOffset) {
  EXPECT_MENTIONS("tensor 'w' offset 8 is not a multiple of the alignment 32",
                  open_error(one_tensor({2}, kF32, 8, 32)));
}

TEST(CorruptTest, DuplicateAndEmptyTensorNames) {
  EXPECT_MENTIONS("duplicate tensor name 'w'", open_error(RawBuilder()
                                                              .header(2, 0)
                                                              .tensor("w", {8}, kF32, 0)
                                                              .tensor("w", {8}, kF32, 32)
                                                              .pad()
                                                              .zeros(64)
                                                              .data()));
  EXPECT_MENTIONS(
      "tensor 0 has an empty name",
      open_error(RawBuilder().header(1, 0).tensor("", {8}, kF32, 0).pad().zeros(32).data()));
}

TEST(OpenTest, MissingFile) {
  const std::string path = STRATA_TEST_TMPDIR "/gguf_no_such_file.gguf";
  auto f = File::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(f.status().message(), "cannot open '" + path + "': No such file or directory");
}

TEST(OpenTest, EmptyFileAndDirectory) {
  const std::string path = STRATA_TEST_TMPDIR "/gguf_empty.gguf";
  std::ofstream(path).close();
  auto f = File::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kMalformed);
  EXPECT_MENTIONS("file too small", f.status().message());
  std::filesystem::remove(path);

  auto d = File::open(STRATA_TEST_TMPDIR);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kIo);
  EXPECT_MENTIONS("not a regular file", d.status().message());
}

}  // namespace
}  // namespace strata::gguf
