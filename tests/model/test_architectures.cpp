// The architecture registry: every architecture in ../shared/models loads and declares how
// each weight splits; files that contradict themselves fail with one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "gguf/writer.h"
#include "memory/buffer.h"
#include "model/model.h"

namespace strata::model {
namespace {

std::string shared_model(const std::string& name) {
  return std::string(STRATA_SHARED_DIR) + "/models/" + name;
}

const char* const kArchFiles[] = {"stories260K.gguf",    "arch-qwen2.gguf",      "arch-qwen3.gguf",
                                  "arch-phi3.gguf",      "arch-gemma2.gguf",     "arch-gemma3.gguf",
                                  "arch-llama-moe.gguf", "arch-llama3-rope.gguf"};

// A copy of `src` at `dst` with its metadata passed through `edit` (which may change or drop
// entries) and the tensor named `drop` left out.
void rewrite(const std::string& src, const std::string& dst,
             const std::function<bool(gguf::KeyValue&)>& edit, const std::string& drop = "") {
  auto in = gguf::File::open(src);
  ASSERT_TRUE(in.ok()) << in.status().message();
  gguf::Writer w;
  for (gguf::KeyValue kv : in->metadata()) {
    if (!edit(kv)) continue;
    ASSERT_TRUE(w.add_metadata(kv.key, kv.value).ok()) << kv.key;
  }
  for (const gguf::TensorInfo& t : in->tensors()) {
    if (t.name == drop) continue;
    ASSERT_TRUE(w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims)).ok());
  }
  ASSERT_TRUE(w.begin(dst).ok());
  for (const gguf::TensorInfo& t : in->tensors()) {
    if (t.name == drop) continue;
    ASSERT_TRUE(w.write_tensor_data(in->tensor_data(t), t.size).ok());
  }
  ASSERT_TRUE(w.finish().ok());
}

Status load_status(const std::string& path) {
  auto m = Model::load(path, memory::host_buffer_type());
  return m.ok() ? Status{} : m.status();
}

TEST(Architectures, EveryModelLoadsAndDeclaresItsSplits) {
  for (const char* file : kArchFiles) {
    const std::string path = shared_model(file);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
    auto m = Model::load(path, memory::host_buffer_type());
    ASSERT_TRUE(m.ok()) << file << ": " << m.status().message();
    const Model& model = **m;
    EXPECT_EQ(model.arch().name, *model.file().get_string("general.architecture"));
    const Weights& w = model.weights();
    for (const core::Tensor& t : w.ctx.tensors()) {
      const Weights::Info* info = w.find(&t);
      ASSERT_NE(info, nullptr) << file << ": " << t.name << " has no declaration";
      const WeightSplit& s = info->split;
      if (s.axis == SplitAxis::kMirrored) continue;
      // The feature axis: a matrix's rows or columns, a bias's only dimension.
      const int64_t extent = s.axis == SplitAxis::kColumns || t.ne[1] == 1 ? t.ne[0] : t.ne[1];
      int64_t sum = 0;
      for (int64_t seg : s.segments) {
        EXPECT_EQ(seg % s.granule, 0) << file << ": " << t.name;
        sum += seg;
      }
      if (!s.segments.empty()) {
        EXPECT_EQ(sum, extent) << file << ": " << t.name;
      }
      EXPECT_EQ(extent % s.granule, 0) << file << ": " << t.name;
    }
  }
}

TEST(Architectures, UnknownArchitectureNamesItAndTheSupportedOnes) {
  const std::string src = shared_model("arch-qwen2.gguf");
  if (!std::filesystem::exists(src)) GTEST_SKIP() << src << " not found";
  const std::string dst = std::string(STRATA_TEST_TMPDIR) + "/arch-mamba.gguf";
  rewrite(src, dst, [](gguf::KeyValue& kv) {
    if (kv.key == "general.architecture") kv.value = gguf::make_value(std::string("mamba"));
    return true;
  });
  const Status st = load_status(dst);
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.message().find("unknown architecture 'mamba'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("qwen2"), std::string::npos) << st.message();
  std::filesystem::remove(dst);
}

TEST(Architectures, HparamsThatContradictTheTensorShapesAreMalformed) {
  const std::string src = shared_model("arch-qwen3.gguf");
  if (!std::filesystem::exists(src)) GTEST_SKIP() << src << " not found";
  const std::string dst = std::string(STRATA_TEST_TMPDIR) + "/arch-qwen3-bad-heads.gguf";
  rewrite(src, dst, [](gguf::KeyValue& kv) {
    if (kv.key == "qwen3.attention.key_length" || kv.key == "qwen3.attention.value_length") {
      kv.value = gguf::make_value(uint32_t{40});
    }
    return true;
  });
  const Status st = load_status(dst);
  EXPECT_EQ(st.code(), ErrorCode::kMalformed);
  EXPECT_EQ(st.message(),
            "model: tensor 'blk.0.attn_q.weight' has shape [128, 192], expected [128, 160]");
  std::filesystem::remove(dst);
}

TEST(Architectures, AMissingTensorIsNamed) {
  const std::string src = shared_model("arch-phi3.gguf");
  if (!std::filesystem::exists(src)) GTEST_SKIP() << src << " not found";
  const std::string dst = std::string(STRATA_TEST_TMPDIR) + "/arch-phi3-no-qkv.gguf";
  rewrite(
      src, dst, [](gguf::KeyValue&) { return true; }, "blk.2.attn_qkv.weight");
  const Status st = load_status(dst);
  EXPECT_EQ(st.code(), ErrorCode::kMalformed);
  EXPECT_EQ(st.message(), "model: missing tensor 'blk.2.attn_qkv.weight'");
  std::filesystem::remove(dst);
}

TEST(Architectures, ExpertCountsThatDisagreeAreMalformed) {
  const std::string src = shared_model("arch-llama-moe.gguf");
  if (!std::filesystem::exists(src)) GTEST_SKIP() << src << " not found";
  const std::string dst = std::string(STRATA_TEST_TMPDIR) + "/arch-moe-bad.gguf";
  rewrite(src, dst, [](gguf::KeyValue& kv) {
    if (kv.key == "llama.expert_used_count") kv.value = gguf::make_value(uint32_t{5});
    return true;
  });
  const Status st = load_status(dst);
  EXPECT_EQ(st.code(), ErrorCode::kMalformed);
  EXPECT_NE(st.message().find("expert_used_count 5"), std::string::npos) << st.message();
  std::filesystem::remove(dst);
}

}  // namespace
}  // namespace strata::model
