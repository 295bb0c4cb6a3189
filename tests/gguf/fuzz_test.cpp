// Damaged copies of a small valid file: each must open or fail cleanly, never crash or read
// out of bounds (run under AddressSanitizer to make the last part visible).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/test_util.h"

namespace strata::gguf {
namespace {

// Touches everything an opened file exposes, so a bad pointer or size shows up here.
uint64_t use_everything(const File& f) {
  uint64_t sum = 0;
  for (const KeyValue& kv : f.metadata()) sum += kv.value.to_display_string().size();
  for (const TensorInfo& t : f.tensors()) {
    const auto* p = static_cast<const uint8_t*>(f.tensor_data(t));
    for (size_t i = 0; i < t.size; ++i) sum += p[i];
  }
  return sum;
}

TEST(FuzzTest, SmallValidFileOpens) {
  const std::vector<uint8_t> bytes = testing::small_valid_file();
  auto f = File::from_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  const TensorInfo& last = f->tensors().back();
  EXPECT_EQ(static_cast<const uint8_t*>(f->tensor_data(last)) + last.size,
            bytes.data() + bytes.size());
}

TEST(FuzzTest, TruncationAtEveryByteIsAnError) {
  const std::vector<uint8_t> bytes = testing::small_valid_file();
  ASSERT_GT(bytes.size(), 100u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    auto f = File::from_memory(prefix.data(), prefix.size());
    ASSERT_FALSE(f.ok()) << "a file truncated to " << n << " bytes opened";
    EXPECT_EQ(f.status().code(), ErrorCode::kMalformed) << n << ": " << f.status().message();
    EXPECT_EQ(f.status().message().rfind("gguf: ", 0), 0u) << f.status().message();
  }
}

TEST(FuzzTest, RandomBitFlipsOpenOrFailCleanly) {
  const std::vector<uint8_t> bytes = testing::small_valid_file();
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<size_t> position(0, bytes.size() * 8 - 1);
  std::uniform_int_distribution<int> flips(1, 4);
  int opened = 0;
  int failed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> damaged = bytes;
    for (int k = flips(rng); k > 0; --k) {
      const size_t bit = position(rng);
      damaged[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    }
    auto f = File::from_memory(damaged.data(), damaged.size());
    if (f.ok()) {
      use_everything(*f);
      ++opened;
    } else {
      EXPECT_EQ(f.status().code(), ErrorCode::kMalformed) << f.status().message();
      EXPECT_FALSE(f.status().message().empty());
      ++failed;
    }
  }
  // Most flips land in tensor data or values and leave a valid file; some must not.
  EXPECT_GT(opened, 0);
  EXPECT_GT(failed, 0);
}

TEST(FuzzTest, RandomBytesInTheHeaderOpenOrFailCleanly) {
  const std::vector<uint8_t> bytes = testing::small_valid_file();
  std::mt19937_64 rng(7);
  // The structure is in the first part of the file; overwrite whole bytes there.
  std::uniform_int_distribution<size_t> position(0, bytes.size() / 2);
  std::uniform_int_distribution<int> value(0, 255);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> damaged = bytes;
    for (int k = 0; k < 3; ++k) damaged[position(rng)] = static_cast<uint8_t>(value(rng));
    auto f = File::from_memory(damaged.data(), damaged.size());
    if (f.ok()) {
      use_everything(*f);
    } else {
      EXPECT_EQ(f.status().code(), ErrorCode::kMalformed) << f.status().message();
    }
  }
}

}  // namespace
}  // namespace strata::gguf
