// Helpers shared by the gguf tests: hand-built GGUF bytes and small valid files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"

/// Expects `message` to contain `needle`. A macro so that a failure reports the caller's line.
#define EXPECT_MENTIONS(needle, message) \
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, message)

namespace strata::gguf::testing {

/// Appends raw GGUF fields, with no checks, so tests can build files the writer refuses to.
class RawBuilder {
 public:
  RawBuilder& bytes(std::string_view s) {
    out_.insert(out_.end(), s.begin(), s.end());
    return *this;
  }
  RawBuilder& u8(uint8_t v) { return put(v); }
  RawBuilder& u32(uint32_t v) { return put(v); }
  RawBuilder& u64(uint64_t v) { return put(v); }
  RawBuilder& str(std::string_view s) { return u64(s.size()).bytes(s); }

  /// Magic, version and the two counts.
  RawBuilder& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return bytes("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  RawBuilder& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  RawBuilder& kv_string(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  RawBuilder& tensor(std::string_view name, const std::vector<uint64_t>& ne, uint32_t type,
                     uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) u64(n);
    return u32(type).u64(offset);
  }
  /// Zero bytes up to the next multiple of `alignment`.
  RawBuilder& pad(size_t alignment = 32) {
    while (out_.size() % alignment != 0) out_.push_back(0);
    return *this;
  }
  RawBuilder& zeros(size_t n) {
    out_.resize(out_.size() + n, 0);
    return *this;
  }

  size_t size() const { return out_.size(); }
  const std::vector<uint8_t>& data() const { return out_; }

 private:
  template <typename T>
  RawBuilder& put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
    return *this;
  }

  std::vector<uint8_t> out_;
};

/// The error message from opening `bytes`, or "ok" when they open. The bytes are opened
/// through a heap copy of exactly their size, so AddressSanitizer reports any read past the
/// end.
inline std::string open_error(const std::vector<uint8_t>& bytes) {
  const std::vector<uint8_t> exact(bytes.begin(), bytes.end());
  auto f = File::from_memory(exact.data(), exact.size());
  if (f.ok()) return "ok";
  EXPECT_EQ(f.status().code(), ErrorCode::kMalformed) << f.status().message();
  return f.status().message();
}

/// A small valid file: metadata of several types (nested array included) and three tensors.
/// The last tensor ends on an alignment boundary, so the file has no trailing padding and
/// any truncation cuts something that is needed.
inline std::vector<uint8_t> small_valid_file() {
  Writer w;
  EXPECT_TRUE(w.add_metadata("general.architecture", make_string("llama")).ok());
  EXPECT_TRUE(w.add_metadata("llama.block_count", make_value(uint32_t{2})).ok());
  EXPECT_TRUE(w.add_metadata("llama.eps", make_value(1e-5f)).ok());
  EXPECT_TRUE(w.add_metadata("tok.list", make_array(std::vector<std::string>{"a", "bc"})).ok());
  EXPECT_TRUE(w.add_metadata("nested",
                             make_array(ValueType::kArray, {make_array(std::vector<int16_t>{1, -2}),
                                                            make_array(std::vector<bool>{true})}))
                  .ok());
  EXPECT_TRUE(w.add_tensor("a", core::Type::kF32, {3, 2}).ok());
  EXPECT_TRUE(w.add_tensor("b", core::Type::kQ8_0, {32}).ok());
  EXPECT_TRUE(w.add_tensor("c", core::Type::kF16, {16, 2}).ok());
  EXPECT_TRUE(w.begin_in_memory().ok());
  for (const TensorInfo& t : w.tensors()) {
    std::vector<uint8_t> data(t.size);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
    EXPECT_TRUE(w.write_tensor_data(data.data(), data.size()).ok());
  }
  EXPECT_TRUE(w.finish().ok());
  auto bytes = w.take_bytes();
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? std::move(*bytes) : std::vector<uint8_t>{};
}

}  // namespace strata::gguf::testing
