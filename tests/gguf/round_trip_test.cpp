#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/test_util.h"
#include "gguf/writer.h"

namespace strata::gguf {
namespace {

std::vector<KeyValue> every_value_type() {
  std::vector<KeyValue> kvs;
  kvs.push_back({"v.u8", make_value(uint8_t{250})});
  kvs.push_back({"v.i8", make_value(int8_t{-120})});
  kvs.push_back({"v.u16", make_value(uint16_t{65000})});
  kvs.push_back({"v.i16", make_value(int16_t{-32000})});
  kvs.push_back({"v.u32", make_value(uint32_t{4000000000u})});
  kvs.push_back({"v.i32", make_value(int32_t{-2000000000})});
  kvs.push_back({"v.f32", make_value(3.25f)});
  kvs.push_back({"v.bool", make_value(true)});
  kvs.push_back({"v.string", make_string("hello \xe2\x96\x81world")});
  kvs.push_back({"v.empty_string", make_string("")});
  kvs.push_back({"v.u64", make_value(std::numeric_limits<uint64_t>::max())});
  kvs.push_back({"v.i64", make_value(std::numeric_limits<int64_t>::min())});
  kvs.push_back({"v.f64", make_value(-1.0e300)});
  kvs.push_back({"a.u8", make_array(std::vector<uint8_t>{0, 255})});
  kvs.push_back({"a.i8", make_array(std::vector<int8_t>{-128, 127})});
  kvs.push_back({"a.u16", make_array(std::vector<uint16_t>{1, 2})});
  kvs.push_back({"a.i16", make_array(std::vector<int16_t>{-1, 2})});
  kvs.push_back({"a.u32", make_array(std::vector<uint32_t>{7})});
  kvs.push_back({"a.i32", make_array(std::vector<int32_t>{-7, 8, 9})});
  kvs.push_back({"a.f32", make_array(std::vector<float>{0.5f, -0.0f})});
  kvs.push_back({"a.bool", make_array(std::vector<bool>{true, false, true})});
  kvs.push_back({"a.string", make_array(std::vector<std::string>{"<s>", "", "\n"})});
  kvs.push_back({"a.u64", make_array(std::vector<uint64_t>{1ull << 63})});
  kvs.push_back({"a.i64", make_array(std::vector<int64_t>{-(1ll << 62)})});
  kvs.push_back({"a.f64", make_array(std::vector<double>{1e-300})});
  kvs.push_back({"a.empty", make_array(std::vector<float>{})});
  kvs.push_back({"a.nested", make_array(ValueType::kArray,
                                        {make_array(std::vector<std::string>{"x", "y"}),
                                         make_array(std::vector<int32_t>{}),
                                         make_array(ValueType::kArray,
                                                    {make_array(std::vector<double>{2.5})})})});
  return kvs;
}

struct TestTensor {
  std::string name;
  core::Type type;
  std::vector<int64_t> ne;
};

std::vector<TestTensor> several_tensor_types() {
  return {{"f32", core::Type::kF32, {5, 3}},         {"f16", core::Type::kF16, {7}},
          {"bf16", core::Type::kBF16, {2, 2, 2, 2}}, {"q8_0", core::Type::kQ8_0, {64, 2}},
          {"q4_0", core::Type::kQ4_0, {32, 1, 3}},   {"q4_k", core::Type::kQ4_K, {256, 2}},
          {"q6_k", core::Type::kQ6_K, {512}},        {"i32", core::Type::kI32, {3}},
          {"empty", core::Type::kF32, {4, 0}},       {"last", core::Type::kF64, {1}}};
}

uint8_t pattern(size_t tensor, size_t i) {
  return static_cast<uint8_t>(tensor * 31 + i * 13 + 5);
}

// Writes every value type and several tensor types, data in uneven chunks.
Status write_test_file(Writer& w, const std::string* path) {
  for (KeyValue& kv : every_value_type()) {
    STRATA_RETURN_IF_ERROR(w.add_metadata(kv.key, std::move(kv.value)));
  }
  for (const TestTensor& t : several_tensor_types()) {
    STRATA_RETURN_IF_ERROR(w.add_tensor(t.name, t.type, t.ne));
  }
  STRATA_RETURN_IF_ERROR(path != nullptr ? w.begin(*path) : w.begin_in_memory());
  for (size_t ti = 0; ti < w.tensors().size(); ++ti) {
    const TensorInfo& t = w.tensors()[ti];
    std::vector<uint8_t> data(t.size);
    for (size_t i = 0; i < data.size(); ++i) data[i] = pattern(ti, i);
    for (size_t at = 0; at < data.size();) {
      const size_t n = std::min<size_t>(data.size() - at, 1 + at % 37);
      STRATA_RETURN_IF_ERROR(w.write_tensor_data(data.data() + at, n));
      at += n;
    }
  }
  return w.finish();
}

void expect_test_file(const File& f) {
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  const std::vector<KeyValue> expected = every_value_type();
  ASSERT_EQ(f.metadata().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].key, expected[i].key);
    EXPECT_TRUE(f.metadata()[i].value == expected[i].value)
        << expected[i].key << ": " << f.metadata()[i].value.to_display_string();
  }
  const std::vector<TestTensor> tensors = several_tensor_types();
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (size_t ti = 0; ti < tensors.size(); ++ti) {
    const TensorInfo* t = f.find_tensor(tensors[ti].name);
    ASSERT_NE(t, nullptr) << tensors[ti].name;
    EXPECT_EQ(t, &f.tensors()[ti]);
    EXPECT_EQ(t->type, tensors[ti].type);
    EXPECT_EQ(t->n_dims, static_cast<int>(tensors[ti].ne.size()));
    int64_t elements = 1;
    for (int d = 0; d < 4; ++d) {
      const int64_t want = d < t->n_dims ? tensors[ti].ne[d] : 1;
      EXPECT_EQ(t->ne[d], want);
      elements *= want;
    }
    EXPECT_EQ(t->size, core::type_size(t->type) * elements / core::block_size(t->type));
    EXPECT_EQ(t->offset % 32, 0u);
    const auto* data = static_cast<const uint8_t*>(f.tensor_data(*t));
    for (size_t i = 0; i < t->size; ++i) ASSERT_EQ(data[i], pattern(ti, i)) << t->name << " " << i;
  }
  EXPECT_EQ(f.data_section() + f.data_section_size(),
            static_cast<const uint8_t*>(f.tensor_data(f.tensors().back())) +
                f.tensors().back().size + 24);  // f64 [1] = 8 bytes, padded to 32
}

TEST(RoundTripTest, InMemoryEveryValueTypeAndSeveralTensorTypes) {
  Writer w;
  ASSERT_TRUE(write_test_file(w, nullptr).ok());
  auto bytes = w.take_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(bytes->size() % 32, 0u);
  auto f = File::from_memory(bytes->data(), bytes->size());
  ASSERT_TRUE(f.ok()) << f.status().message();
  expect_test_file(*f);
  EXPECT_EQ(f->file_size(), bytes->size());
  EXPECT_EQ(f->path(), "");
}

TEST(RoundTripTest, ThroughAFile) {
  const std::string path = STRATA_TEST_TMPDIR "/gguf_round_trip.gguf";
  {
    Writer w;
    const Status s = write_test_file(w, &path);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  expect_test_file(*f);
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->file_size(), std::filesystem::file_size(path));

  // The File stays valid after a move and after the path is gone (the mapping holds it).
  File moved = std::move(*f);
  std::filesystem::remove(path);
  expect_test_file(moved);
}

TEST(RoundTripTest, TypedGetters) {
  Writer w;
  ASSERT_TRUE(write_test_file(w, nullptr).ok());
  auto bytes = w.take_bytes();
  ASSERT_TRUE(bytes.ok());
  auto f = File::from_memory(bytes->data(), bytes->size());
  ASSERT_TRUE(f.ok()) << f.status().message();

  EXPECT_EQ(*f->get_string("v.string"), "hello \xe2\x96\x81world");
  EXPECT_EQ(*f->get_int("v.u8"), 250);
  EXPECT_EQ(*f->get_int("v.i16"), -32000);
  EXPECT_EQ(*f->get_int("v.u32"), 4000000000);
  EXPECT_EQ(*f->get_int("v.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f->get_float("v.f32"), 3.25f);
  EXPECT_EQ(*f->get_float("v.u16"), 65000.0f);
  EXPECT_EQ(*f->get_bool("v.bool"), true);
  auto arr = f->get_array("a.string");
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ((*arr)->items.size(), 3u);
  EXPECT_EQ(f->find("missing"), nullptr);
  EXPECT_NE(f->find("v.u8"), nullptr);
  EXPECT_EQ(f->find_tensor("missing"), nullptr);

  EXPECT_EQ(f->get_string("missing").status().code(), ErrorCode::kNotFound);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "'missing' not found",
                      f->get_int("missing").status().message());
  EXPECT_EQ(f->get_string("v.u8").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "is a u8, not a string",
                      f->get_string("v.u8").status().message());
  EXPECT_EQ(f->get_int("v.f32").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f->get_int("v.bool").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f->get_int("v.u64").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f->get_float("v.string").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f->get_bool("v.u8").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f->get_array("v.u8").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f->get_array("missing").status().code(), ErrorCode::kNotFound);
}

TEST(RoundTripTest, CustomAlignmentAndNoTensors) {
  Writer w;
  ASSERT_TRUE(w.add_metadata("general.alignment", make_value(uint32_t{64})).ok());
  ASSERT_TRUE(w.add_tensor("a", core::Type::kF32, {3}).ok());
  ASSERT_TRUE(w.add_tensor("b", core::Type::kF32, {3}).ok());
  EXPECT_EQ(w.alignment(), 64u);
  ASSERT_TRUE(w.begin_in_memory().ok());
  EXPECT_EQ(w.tensors()[1].offset, 64u);
  const float data[6] = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(w.write_tensor_data(data, 12).ok());
  ASSERT_TRUE(w.write_tensor_data(data + 3, 12).ok());
  ASSERT_TRUE(w.finish().ok());
  auto bytes = w.take_bytes();
  ASSERT_TRUE(bytes.ok());
  auto f = File::from_memory(bytes->data(), bytes->size());
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->tensors()[1].offset, 64u);
  EXPECT_EQ(
      reinterpret_cast<uintptr_t>(f->data_section()) - reinterpret_cast<uintptr_t>(bytes->data()),
      bytes->size() - 128);
  EXPECT_EQ(static_cast<const float*>(f->tensor_data(f->tensors()[1]))[2], 6.0f);

  Writer empty;
  ASSERT_TRUE(empty.add_metadata("general.name", make_string("empty")).ok());
  ASSERT_TRUE(empty.begin_in_memory().ok());
  ASSERT_TRUE(empty.finish().ok());
  auto empty_bytes = empty.take_bytes();
  ASSERT_TRUE(empty_bytes.ok());
  auto g = File::from_memory(empty_bytes->data(), empty_bytes->size());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->tensors().empty());
  EXPECT_EQ(g->data_section_size(), 0u);
}

void expect_error(const Status& s, ErrorCode code, const char* needle) {
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, s.message());
}

TEST(WriterTest, RejectsBadMetadataAndTensors) {
  Writer w;
  ASSERT_TRUE(w.add_metadata("k", make_value(uint8_t{1})).ok());
  expect_error(w.add_metadata("k", make_value(uint8_t{1})), ErrorCode::kInvalidArgument,
               "duplicate metadata key 'k'");
  expect_error(w.add_metadata("", make_value(uint8_t{1})), ErrorCode::kInvalidArgument, "empty");
  expect_error(w.add_metadata("bad", Value{ValueType::kUint32, uint8_t{1}}),
               ErrorCode::kInvalidArgument, "declared u32 but holds a u8");
  expect_error(w.add_metadata("mixed", make_array(ValueType::kInt32, {make_value(1.0f)})),
               ErrorCode::kInvalidArgument, "array of i32 holding a f32");
  Value deep = make_array(std::vector<int32_t>{1});
  for (int i = 0; i < 64; ++i) deep = make_array(ValueType::kArray, {deep});
  expect_error(w.add_metadata("deep", deep), ErrorCode::kInvalidArgument, "nested deeper");
  expect_error(w.add_metadata("general.alignment", make_value(uint32_t{48})),
               ErrorCode::kInvalidArgument, "power of two");
  expect_error(w.add_metadata("general.alignment", make_value(uint64_t{64})),
               ErrorCode::kInvalidArgument, "u32");

  ASSERT_TRUE(w.add_tensor("t", core::Type::kF32, {4}).ok());
  expect_error(w.add_tensor("t", core::Type::kF32, {4}), ErrorCode::kInvalidArgument,
               "duplicate tensor name 't'");
  expect_error(w.add_tensor("", core::Type::kF32, {4}), ErrorCode::kInvalidArgument, "empty");
  expect_error(w.add_tensor("u", core::Type::kF32, {}), ErrorCode::kInvalidArgument,
               "0 dimensions");
  expect_error(w.add_tensor("u", core::Type::kF32, {1, 1, 1, 1, 1}), ErrorCode::kInvalidArgument,
               "5 dimensions");
  expect_error(w.add_tensor("u", core::Type::kQ8_0, {33}), ErrorCode::kInvalidArgument,
               "row length 33 is not a multiple of the q8_0 block size 32");
  expect_error(w.add_tensor("u", core::Type::kF32, {-1}), ErrorCode::kInvalidArgument, "negative");
  expect_error(w.add_tensor("u", core::Type::kF32, {1ll << 32, 1ll << 32}),
               ErrorCode::kInvalidArgument, "overflows");
  expect_error(w.add_tensor("u", static_cast<core::Type>(4), {1}), ErrorCode::kInvalidArgument,
               "invalid type id 4");
}

TEST(WriterTest, EnforcesOrderAndByteCounts) {
  Writer w;
  expect_error(w.write_tensor_data("x", 1), ErrorCode::kInvalidArgument, "before begin()");
  expect_error(w.finish(), ErrorCode::kInvalidArgument, "before begin()");
  expect_error(w.take_bytes().status(), ErrorCode::kInvalidArgument, "begin_in_memory");
  ASSERT_TRUE(w.add_tensor("a", core::Type::kF32, {2}).ok());
  ASSERT_TRUE(w.add_tensor("b", core::Type::kF32, {1}).ok());
  ASSERT_TRUE(w.begin_in_memory().ok());
  expect_error(w.add_metadata("k", make_value(true)), ErrorCode::kInvalidArgument,
               "add_metadata called after begin()");
  expect_error(w.add_tensor("c", core::Type::kF32, {1}), ErrorCode::kInvalidArgument,
               "after begin()");
  expect_error(w.begin_in_memory(), ErrorCode::kInvalidArgument, "after begin()");
  expect_error(w.take_bytes().status(), ErrorCode::kInvalidArgument, "after begin()");

  const float v[3] = {1, 2, 3};
  ASSERT_TRUE(w.write_tensor_data(v, 4).ok());
  expect_error(w.write_tensor_data(v, 8), ErrorCode::kInvalidArgument,
               "runs past the end of tensor 'a' (4 of its 8 bytes left)");
  ASSERT_TRUE(w.write_tensor_data(v + 1, 4).ok());
  expect_error(w.finish(), ErrorCode::kInvalidArgument, "tensor 'b' incomplete (0 of 4 bytes");
  ASSERT_TRUE(w.write_tensor_data(v + 2, 4).ok());
  expect_error(w.write_tensor_data(v, 1), ErrorCode::kInvalidArgument, "after the last tensor");
  ASSERT_TRUE(w.finish().ok());
  expect_error(w.finish(), ErrorCode::kInvalidArgument, "after finish()");
  auto bytes = w.take_bytes();
  ASSERT_TRUE(bytes.ok());
  auto f = File::from_memory(bytes->data(), bytes->size());
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(static_cast<const float*>(f->tensor_data(*f->find_tensor("b")))[0], 3.0f);
}

TEST(WriterTest, AbandonedFileIsRemovedAndUncreatableFileIsAnError) {
  const std::string path = STRATA_TEST_TMPDIR "/gguf_abandoned.gguf";
  {
    Writer w;
    ASSERT_TRUE(w.add_tensor("a", core::Type::kF32, {2}).ok());
    ASSERT_TRUE(w.begin(path).ok());
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));

  Writer w;
  const Status s = w.begin(STRATA_TEST_TMPDIR "/no/such/dir/x.gguf");
  expect_error(s, ErrorCode::kIo, "cannot create");
  expect_error(s, ErrorCode::kIo, "No such file or directory");
}

}  // namespace
}  // namespace strata::gguf
