// Quantized tensors from files written by llama.cpp's quantizer, checked against the same model
// in F32: our dequantization must reproduce the values llama.cpp encoded (a wrong layout gives
// errors near 100%), and our reference quantizers must produce the same blocks as llama.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/types.h"
#include "gguf/file.h"

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;
using core::Type;

std::string model_path(const std::string& name) {
  return STRATA_SHARED_DIR "/models/" + name;
}

int64_t nelements(const TensorInfo& t) {
  return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

/// RMS of (a - b) relative to the RMS of b.
double relative_rms_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    err += d * d;
    ref += static_cast<double>(b[i]) * b[i];
  }
  return ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
}

/// Largest relative RMS error a correct dequantization of random Gaussian-like weights stays
/// under, per type: a few times the format's typical error, far below a layout bug's ~100%.
double max_dequant_error(Type t) {
  switch (t) {
    case Type::kQ8_0:
      return 0.01;
    case Type::kQ6_K:
      return 0.02;
    case Type::kQ5_K:
      return 0.04;
    case Type::kQ4_K:
      return 0.08;
    case Type::kQ4_0:
      return 0.12;
    case Type::kQ3_K:
      return 0.15;
    case Type::kQ2_K:
      return 0.35;
    default:
      return 0.10;
  }
}

struct Totals {
  int tensors = 0;
  double theirs = 0, ours = 0;  // summed relative errors
  size_t bytes = 0, same_bytes = 0, blocks = 0, same_blocks = 0;
};

/// For every quantized tensor of `name`: dequantize it and compare with the F32 model; quantize
/// the F32 tensor ourselves and compare both the error and the bytes with llama.cpp's.
void check_file(const std::string& name) {
  const std::string qpath = model_path(name), fpath = model_path("synth256-f32.gguf");
  if (!fs::exists(qpath) || !fs::exists(fpath)) GTEST_SKIP() << qpath << " or F32 is missing";
  auto qf = File::open(qpath);
  auto ff = File::open(fpath);
  ASSERT_TRUE(qf.ok()) << qf.status().message();
  ASSERT_TRUE(ff.ok()) << ff.status().message();

  std::map<Type, Totals> totals;
  for (const TensorInfo& q : qf->tensors()) {
    if (!core::is_quantized(q.type)) continue;
    const TensorInfo* f = ff->find_tensor(q.name);
    ASSERT_NE(f, nullptr) << q.name;
    ASSERT_EQ(f->type, Type::kF32) << q.name;
    ASSERT_EQ(nelements(*f), nelements(q)) << q.name;
    const auto& tr = core::traits(q.type);
    ASSERT_NE(tr.to_float, nullptr) << core::type_name(q.type);
    ASSERT_NE(tr.from_float, nullptr) << core::type_name(q.type);

    const int64_t n = nelements(q);
    std::vector<float> ref(static_cast<size_t>(n)), theirs(ref.size()), ours(ref.size());
    std::memcpy(ref.data(), ff->tensor_data(*f), ref.size() * sizeof(float));
    tr.to_float(qf->tensor_data(q), theirs.data(), n);

    std::vector<uint8_t> mine(q.size);
    ASSERT_EQ(core::row_size(q.type, n), q.size) << q.name;
    tr.from_float(ref.data(), mine.data(), n);
    tr.to_float(mine.data(), ours.data(), n);

    const double e_theirs = relative_rms_error(theirs, ref);
    const double e_ours = relative_rms_error(ours, ref);
    EXPECT_LT(e_theirs, max_dequant_error(q.type)) << q.name << " " << core::type_name(q.type);
    // Our reference quantizer must be as good as llama.cpp's (within 10%).
    EXPECT_LT(e_ours, 1.10 * e_theirs + 1e-7) << q.name << " " << core::type_name(q.type);

    Totals& t = totals[q.type];
    ++t.tensors;
    t.theirs += e_theirs;
    t.ours += e_ours;
    const auto* file_bytes = static_cast<const uint8_t*>(qf->tensor_data(q));
    const size_t bs = core::type_size(q.type);
    for (size_t i = 0; i < q.size; ++i) t.same_bytes += file_bytes[i] == mine[i];
    size_t same_blocks = 0;
    for (size_t b = 0; b < q.size / bs; ++b) {
      same_blocks += std::memcmp(file_bytes + b * bs, mine.data() + b * bs, bs) == 0;
    }
    // Our quantizers follow ggml's reference ones operation for operation: every block of the
    // file, made by llama.cpp's quantizer without an importance matrix, is reproduced.
    EXPECT_EQ(same_blocks, q.size / bs) << q.name << " " << core::type_name(q.type);
    t.same_blocks += same_blocks;
    t.bytes += q.size;
    t.blocks += q.size / bs;
  }
  ASSERT_FALSE(totals.empty()) << name << " holds no quantized tensor";
  for (const auto& [type, t] : totals) {
    std::printf(
        "%s %s: %d tensors, relative RMS error llama.cpp %.4f%% ours %.4f%%, identical bytes "
        "%.3f%%, identical blocks %.3f%%\n",
        name.c_str(), std::string(core::type_name(type)).c_str(), t.tensors,
        100 * t.theirs / t.tensors, 100 * t.ours / t.tensors,
        100.0 * static_cast<double>(t.same_bytes) / static_cast<double>(t.bytes),
        100.0 * static_cast<double>(t.same_blocks) / static_cast<double>(t.blocks));
  }
}

TEST(QuantFiles, Q8_0) {
  check_file("synth256-q8_0.gguf");
}
TEST(QuantFiles, Q4_0) {
  check_file("synth256-q4_0.gguf");
}
TEST(QuantFiles, Q4_K) {
  check_file("synth256-q4_k.gguf");
}
TEST(QuantFiles, Q6_K) {
  check_file("synth256-q6_k.gguf");
}
TEST(QuantFiles, Q4_K_M) {
  check_file("synth256-q4_k_m.gguf");
}

}  // namespace
}  // namespace strata::gguf
