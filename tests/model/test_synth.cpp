// Synthetic models: every weight format writes a file the reader and the loader accept, with
// the planned types and the documented statistics; same seed, same bytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "memory/buffer.h"
#include "model/model.h"
#include "model/synth/random.h"
#include "model/synth/recipe.h"
#include "model/synth/synth.h"
#include "model/synth/tensors.h"
#include "model/tokenizer/tokenizer.h"

namespace strata::model {
namespace {

using ::testing::HasSubstr;

const std::string kSpmVocab = std::string(STRATA_SHARED_DIR) + "/vocab/ggml-vocab-llama-spm.gguf";

std::string tmp_path(const std::string& name) {
  return std::string(STRATA_TEST_TMPDIR) + "/synth_" + name + ".gguf";
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

SynthSpec tiny_spec(const std::string& type, uint64_t seed = 7) {
  SynthSpec spec;
  spec.name = "tiny-test";
  spec.hparams = *synth_preset("tiny");
  spec.type = type;
  spec.seed = seed;
  spec.n_threads = 2;
  return spec;
}

// The shape write_synthetic_model settles on (n_rot resolved).
Hparams resolved(Hparams hp) {
  if (hp.n_rot == 0) hp.n_rot = hp.head_dim();
  return hp;
}

bool all_supported(const std::vector<SynthTensor>& plan) {
  return std::all_of(plan.begin(), plan.end(), [](const SynthTensor& t) {
    return core::traits(t.type).from_float != nullptr && core::is_computable(t.type);
  });
}

// Writes `spec` to `path` and opens it, or explains why not.
Result<gguf::File> write_and_open(const SynthSpec& spec, const std::string& path) {
  STRATA_RETURN_IF_ERROR(write_synthetic_model(spec, path));
  return gguf::File::open(path);
}

TEST(SynthPreset, ShapesAreThePublishedOnes) {
  const Hparams tl = *synth_preset("tinyllama-1.1b");
  EXPECT_EQ(tl.n_embd, 2048);
  EXPECT_EQ(tl.n_layer, 22);
  EXPECT_EQ(tl.n_head, 32);
  EXPECT_EQ(tl.n_head_kv, 4);
  EXPECT_EQ(tl.n_ff, 5632);
  EXPECT_EQ(tl.n_vocab, 32000);
  const Hparams l3 = *synth_preset("llama3-8b");
  EXPECT_EQ(l3.n_embd, 4096);
  EXPECT_EQ(l3.n_head_kv, 8);
  EXPECT_EQ(l3.n_ff, 14336);
  EXPECT_EQ(l3.n_vocab, 128256);
  EXPECT_EQ(l3.rope_freq_base, 500000.0f);
  const Hparams s = *synth_preset("llama-110m");
  EXPECT_EQ(s.n_embd, 768);
  EXPECT_EQ(s.n_layer, 12);
  EXPECT_EQ(s.n_head_kv, 12);
  EXPECT_EQ(s.n_ff, 2048);
}

TEST(SynthPreset, UnknownNameListsTheKnownOnes) {
  auto r = synth_preset("gpt-5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("unknown preset 'gpt-5'"));
  EXPECT_THAT(r.status().message(), HasSubstr("tinyllama-1.1b"));
}

class SynthEveryType : public ::testing::TestWithParam<std::string_view> {};

// The tiny preset in every format: a file whose table matches the plan, whose metadata is
// complete, and which the model loader accepts; or, for a type core cannot quantize to yet, a
// clear kUnsupported and no file.
TEST_P(SynthEveryType, TinyPresetWritesALoadableModel) {
  const std::string name(GetParam());
  const FileType ft = *find_file_type(name);
  const SynthSpec spec = tiny_spec(name);
  const std::string path = tmp_path("type_" + name);
  std::filesystem::remove(path);
  const std::vector<SynthTensor> plan = plan_tensors(resolved(spec.hparams), ft);

  Status st = write_synthetic_model(spec, path);
  if (!all_supported(plan)) {
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.message();
    EXPECT_THAT(st.message(), HasSubstr("is not supported by this build"));
    EXPECT_FALSE(std::filesystem::exists(path));
    GTEST_SKIP() << st.message();
  }
  ASSERT_TRUE(st.ok()) << st.message();

  auto file = gguf::File::open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ(file->tensors().size(), plan.size());
  ASSERT_EQ(plan.size(), 2u * 9 + 3);
  for (size_t i = 0; i < plan.size(); ++i) {
    const gguf::TensorInfo& t = file->tensors()[i];
    EXPECT_EQ(t.name, plan[i].name);
    EXPECT_EQ(t.type, plan[i].type) << t.name;
    ASSERT_EQ(static_cast<size_t>(t.n_dims), plan[i].ne.size()) << t.name;
    for (int d = 0; d < t.n_dims; ++d)
      EXPECT_EQ(t.ne[d], plan[i].ne[static_cast<size_t>(d)]) << t.name;
    if (t.name.find("norm") != std::string::npos) {
      EXPECT_EQ(t.type, core::Type::kF32) << t.name;
    }
  }
  const gguf::TensorInfo* q = file->find_tensor("blk.1.attn_k.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->ne[0], 64);
  EXPECT_EQ(q->ne[1], 32);  // 2 KV heads of 16

  EXPECT_EQ(*file->get_string("general.architecture"), "llama");
  EXPECT_EQ(*file->get_string("general.name"), "tiny-test");
  EXPECT_EQ(*file->get_int("general.file_type"), static_cast<int64_t>(ft.ftype));
  const bool quantized = std::any_of(
      plan.begin(), plan.end(), [](const SynthTensor& t) { return core::is_quantized(t.type); });
  EXPECT_EQ(file->find("general.quantization_version") != nullptr, quantized);
  if (quantized) {
    EXPECT_EQ(*file->get_int("general.quantization_version"), 2);
  }
  EXPECT_EQ(*file->get_int("llama.context_length"), 512);
  EXPECT_EQ(*file->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*file->get_int("llama.block_count"), 2);
  EXPECT_EQ(*file->get_int("llama.feed_forward_length"), 128);
  EXPECT_EQ(*file->get_int("llama.attention.head_count"), 4);
  EXPECT_EQ(*file->get_int("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(*file->get_int("llama.rope.dimension_count"), 16);
  EXPECT_FLOAT_EQ(*file->get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_FLOAT_EQ(*file->get_float("llama.rope.freq_base"), 10000.0f);

  auto model = Model::load(path, memory::host_buffer_type());
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ((*model)->hparams().n_vocab, 512);
  EXPECT_EQ((*model)->hparams().n_layer, 2);
  EXPECT_EQ((*model)->hparams().n_embd_kv(), 32);
  EXPECT_EQ((*model)->tokenizer().n_vocab(), 512);
}

// Qwen2 and Qwen3 shapes: their biases or per-head norms are written, under their
// architecture's keys, and the loader reads them as such.
TEST(Synth, OtherArchitecturesWriteLoadableModels) {
  for (const char* arch : {"qwen2", "qwen3"}) {
    SynthSpec spec = tiny_spec("q8_0");
    spec.hparams.arch = arch;
    const std::string path = tmp_path(std::string("arch_") + arch);
    auto file = write_and_open(spec, path);
    ASSERT_TRUE(file.ok()) << file.status().message();
    EXPECT_EQ(*file->get_string("general.architecture"), arch);
    EXPECT_EQ(*file->get_int(std::string(arch) + ".block_count"), 2);
    auto model = Model::load(path, memory::host_buffer_type());
    ASSERT_TRUE(model.ok()) << arch << ": " << model.status().message();
    const LayerWeights& l = (*model)->weights().layers[1];
    if (std::string(arch) == "qwen2") {
      EXPECT_NE(l.bq, nullptr);
      EXPECT_NE(l.bv, nullptr);
    } else {
      EXPECT_NE(l.attn_q_norm, nullptr);
      EXPECT_NE(l.attn_k_norm, nullptr);
    }
    std::filesystem::remove(path);
  }
  SynthSpec bad = tiny_spec("f16");
  bad.hparams.arch = "gemma2";
  const Status st = write_synthetic_model(bad, tmp_path("arch_bad"));
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("'gemma2' cannot be synthesized"));
}

// At a width the 256-element K-quant blocks divide, so the K types themselves are written.
TEST_P(SynthEveryType, WideEnoughForKQuantsWritesALoadableModel) {
  const std::string name(GetParam());
  SynthSpec spec = tiny_spec(name);
  spec.hparams.n_embd = 256;
  spec.hparams.n_ff = 512;
  const std::vector<SynthTensor> plan = plan_tensors(resolved(spec.hparams), *find_file_type(name));
  if (!all_supported(plan))
    GTEST_SKIP() << "this build cannot quantize every type " << name << " needs";
  const std::string path = tmp_path("wide_" + name);
  auto file = write_and_open(spec, path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ(file->tensors().size(), plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(file->tensors()[i].type, plan[i].type) << plan[i].name;
  }
  auto model = Model::load(path, memory::host_buffer_type());
  ASSERT_TRUE(model.ok()) << model.status().message();
}

INSTANTIATE_TEST_SUITE_P(AllFormats, SynthEveryType, ::testing::ValuesIn(file_type_names()),
                         [](const auto& p) { return std::string(p.param); });

TEST(Synth, SameSeedSameBytesWhateverTheThreads) {
  SynthSpec a = tiny_spec("q8_0", 11);
  a.n_threads = 1;
  SynthSpec b = a;
  b.n_threads = 3;
  ASSERT_TRUE(write_synthetic_model(a, tmp_path("seed_a")).ok());
  ASSERT_TRUE(write_synthetic_model(b, tmp_path("seed_b")).ok());
  const std::vector<uint8_t> bytes_a = read_bytes(tmp_path("seed_a"));
  EXPECT_GT(bytes_a.size(), 100000u);
  EXPECT_EQ(bytes_a, read_bytes(tmp_path("seed_b")));

  SynthSpec c = a;
  c.seed = 12;
  ASSERT_TRUE(write_synthetic_model(c, tmp_path("seed_c")).ok());
  const std::vector<uint8_t> bytes_c = read_bytes(tmp_path("seed_c"));
  ASSERT_EQ(bytes_c.size(), bytes_a.size());  // same layout, other values
  EXPECT_NE(bytes_c, bytes_a);
}

// A tensor larger than one write chunk (8 MiB) holds, row for row, the values of its stream:
// nothing depends on where chunks or thread shares begin.
TEST(Synth, ValuesArePureFunctionsOfSeedNameAndIndex) {
  SynthSpec spec = tiny_spec("f32", 99);
  spec.hparams.n_vocab = 40000;  // token_embd: 64 x 40000 f32 = 9.8 MiB
  spec.hparams.n_layer = 1;
  spec.n_threads = 3;
  auto file = write_and_open(spec, tmp_path("values"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  const gguf::TensorInfo* t = file->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  const auto* data = static_cast<const float*>(file->tensor_data(*t));
  const uint64_t key = synth_stream_key(99, "token_embd.weight");
  for (const int64_t row :
       {int64_t{0}, int64_t{12345}, int64_t{32767}, int64_t{32768}, int64_t{39999}}) {
    std::vector<float> expected(64);
    synth_normal(key, static_cast<uint64_t>(row * 64), 1.0f, expected);
    EXPECT_EQ(std::vector<float>(data + row * 64, data + (row + 1) * 64), expected)
        << "row " << row;
  }
}

// Mean, standard deviation and largest magnitude of an f32 tensor.
struct Stats {
  double mean = 0, stddev = 0, max_abs = 0;
};

Stats stats_of(const gguf::File& file, const std::string& name) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  const auto* x = static_cast<const float*>(file.tensor_data(*t));
  const size_t n = t->size / sizeof(float);
  double sum = 0, sum2 = 0, max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += x[i];
    sum2 += static_cast<double>(x[i]) * x[i];
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(x[i])));
  }
  const double mean = sum / static_cast<double>(n);
  return {mean, std::sqrt(sum2 / static_cast<double>(n) - mean * mean), max_abs};
}

TEST(Synth, WeightsHaveTheDocumentedScales) {
  SynthSpec spec = tiny_spec("f32");
  spec.hparams.n_layer = 8;
  auto file = write_and_open(spec, tmp_path("stats"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  const double residual = 1.0 / std::sqrt(16.0);  // 1/sqrt(2 n_layer)
  const struct {
    const char* name;
    double stddev;
  } cases[] = {
      {"token_embd.weight", 1.0},
      {"blk.0.attn_q.weight", 1.0 / 8},
      {"blk.3.attn_v.weight", 1.0 / 8},
      {"blk.5.ffn_up.weight", 1.0 / 8},
      {"blk.7.attn_output.weight", residual / 8},
      {"blk.2.ffn_down.weight", residual / std::sqrt(128.0)},
      {"output.weight", 1.0 / 8},
  };
  for (const auto& c : cases) {
    const Stats s = stats_of(*file, c.name);
    EXPECT_NEAR(s.stddev, c.stddev, 0.05 * c.stddev) << c.name;
    EXPECT_NEAR(s.mean, 0.0, 0.1 * c.stddev) << c.name;
    EXPECT_LE(s.max_abs, 3.47 * c.stddev) << c.name;
    EXPECT_GT(s.max_abs, 2.5 * c.stddev) << c.name;  // tails, not a uniform
  }
  for (const char* norm :
       {"blk.0.attn_norm.weight", "blk.6.ffn_norm.weight", "output_norm.weight"}) {
    const Stats s = stats_of(*file, norm);
    EXPECT_EQ(s.mean, 1.0) << norm;
    EXPECT_EQ(s.max_abs, 1.0) << norm;
  }
}

// One token through a deep synthetic model in plain double arithmetic (one position, so
// attention returns V): the residual stream stays near unit RMS at every layer.
TEST(Synth, ResidualStreamStaysNearUnitRms) {
  SynthSpec spec = tiny_spec("f32");
  spec.hparams.n_embd = 128;
  spec.hparams.n_head = 8;
  spec.hparams.n_head_kv = 2;
  spec.hparams.n_ff = 352;
  spec.hparams.n_layer = 24;
  auto file = write_and_open(spec, tmp_path("rms"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  const int64_t e = 128, ff = 352, ekv = 32, group = 4, hd = 16;

  auto weight = [&](const std::string& name) {
    const gguf::TensorInfo* t = file->find_tensor(name);
    return static_cast<const float*>(file->tensor_data(*t));
  };
  // y = W x for W stored as GGUF does: ne[0] = in (contiguous), ne[1] = out.
  auto matvec = [](const float* w, const std::vector<double>& x, int64_t out) {
    std::vector<double> y(static_cast<size_t>(out), 0.0);
    const auto in = static_cast<int64_t>(x.size());
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i)
        y[static_cast<size_t>(o)] += w[o * in + i] * x[static_cast<size_t>(i)];
    }
    return y;
  };
  auto rms = [](const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += v * v;
    return std::sqrt(s / static_cast<double>(x.size()));
  };
  auto normed = [&](const std::vector<double>& x) {
    std::vector<double> y = x;
    const double r = rms(x);
    for (double& v : y) v /= r;
    return y;
  };

  const float* embd = weight("token_embd.weight");
  std::vector<double> x(embd + 100 * e, embd + 101 * e);  // token 100
  for (int il = 0; il < 24; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const std::vector<double> v = matvec(weight(p + "attn_v.weight"), normed(x), ekv);
    std::vector<double> heads(static_cast<size_t>(e));  // each query head reads its KV head's V
    for (int64_t i = 0; i < e; ++i)
      heads[static_cast<size_t>(i)] = v[static_cast<size_t>((i / hd / group) * hd + i % hd)];
    const std::vector<double> attn = matvec(weight(p + "attn_output.weight"), heads, e);
    for (int64_t i = 0; i < e; ++i) x[static_cast<size_t>(i)] += attn[static_cast<size_t>(i)];

    const std::vector<double> xn = normed(x);
    const std::vector<double> g = matvec(weight(p + "ffn_gate.weight"), xn, ff);
    std::vector<double> h = matvec(weight(p + "ffn_up.weight"), xn, ff);
    for (int64_t i = 0; i < ff; ++i) {
      const double gi = g[static_cast<size_t>(i)];
      h[static_cast<size_t>(i)] *= gi / (1.0 + std::exp(-gi));
    }
    const std::vector<double> down = matvec(weight(p + "ffn_down.weight"), h, e);
    for (int64_t i = 0; i < e; ++i) x[static_cast<size_t>(i)] += down[static_cast<size_t>(i)];
    EXPECT_GT(rms(x), 0.7) << "after layer " << il;
    EXPECT_LT(rms(x), 1.6) << "after layer " << il;
  }
  const std::vector<double> logits = matvec(weight("output.weight"), normed(x), 512);
  EXPECT_NEAR(rms(logits), 1.0, 0.2);
}

TEST(Synth, MadeUpVocabularyRoundTripsText) {
  auto file = write_and_open(tiny_spec("f32"), tmp_path("vocab_made_up"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  for (const std::string text :
       {"hello world", "Once upon a time, 42 cats!", "caf\xc3\xa9 \xe2\x9c\x93"}) {
    const std::vector<int32_t> ids = tok->encode(text, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], 1);
    EXPECT_EQ(tok->decode(std::vector<int32_t>(ids.begin() + 1, ids.end()), true), text);
  }
  // Words merge into multi-letter pieces rather than staying letter by letter.
  EXPECT_LT(tok->encode("ab ab ab", false).size(), 8u);
}

TEST(Synth, CopiesTheVocabularyOfAnotherFile) {
  if (!std::filesystem::exists(kSpmVocab)) GTEST_SKIP() << kSpmVocab << " is missing";
  SynthSpec spec = tiny_spec("q8_0");
  spec.hparams.n_vocab = 0;  // follow the file
  spec.vocab_path = kSpmVocab;
  auto file = write_and_open(spec, tmp_path("vocab_copy"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto source = gguf::File::open(kSpmVocab);
  ASSERT_TRUE(source.ok());
  size_t copied = 0;
  for (const gguf::KeyValue& kv : source->metadata()) {
    if (!kv.key.starts_with("tokenizer.")) continue;
    const gguf::Value* v = file->find(kv.key);
    ASSERT_NE(v, nullptr) << kv.key;
    EXPECT_TRUE(*v == kv.value) << kv.key;
    ++copied;
  }
  EXPECT_GE(copied, 4u);
  EXPECT_EQ(file->find_tensor("token_embd.weight")->ne[1], 32000);
  EXPECT_EQ(file->find_tensor("output.weight")->ne[1], 32000);
  auto model = Model::load(tmp_path("vocab_copy"), memory::host_buffer_type());
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ((*model)->tokenizer().n_vocab(), 32000);

  spec.hparams.n_vocab = 32000;  // agreeing is fine
  EXPECT_TRUE(write_synthetic_model(spec, tmp_path("vocab_copy")).ok());
  spec.hparams.n_vocab = 512;
  Status st = write_synthetic_model(spec, tmp_path("vocab_conflict"));
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("n_vocab 512 disagrees"));
}

TEST(Synth, BadSpecsAreClearErrors) {
  const std::string path = tmp_path("bad");
  std::filesystem::remove(path);
  auto expect_invalid = [&](const SynthSpec& spec, const std::string& what) {
    Status st = write_synthetic_model(spec, path);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.message();
    EXPECT_THAT(st.message(), HasSubstr(what));
    EXPECT_FALSE(std::filesystem::exists(path));
  };
  expect_invalid(tiny_spec("q9_9"), "unknown type 'q9_9'");
  SynthSpec s = tiny_spec("f16");
  s.hparams.n_head = 5;
  expect_invalid(s, "not a multiple of n_head");
  s = tiny_spec("f16");
  s.hparams.n_head_kv = 3;
  expect_invalid(s, "not a multiple of n_head_kv");
  s = tiny_spec("f16");
  s.hparams.n_layer = 0;
  expect_invalid(s, "n_layer must be in");
  s = tiny_spec("f16");
  s.hparams.n_vocab = 100;
  expect_invalid(s, "at least <unk>");

  s = tiny_spec("f16");
  s.vocab_path = "/nonexistent/vocab.gguf";
  Status st = write_synthetic_model(s, path);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent/vocab.gguf"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A K-quant mix at a width where the K types apply (the tiny preset only exercises fallbacks).
TEST(Synth, Q4KMWritesALoadableModelWhenKTypesAreBuilt) {
  SynthSpec spec = tiny_spec("q4_k_m");
  spec.hparams.n_embd = 256;
  spec.hparams.n_ff = 512;
  spec.hparams.n_layer = 8;
  const std::vector<SynthTensor> plan =
      plan_tensors(resolved(spec.hparams), *find_file_type("q4_k_m"));
  if (!all_supported(plan)) GTEST_SKIP() << "this build cannot quantize to Q4_K and Q6_K yet";
  auto file = write_and_open(spec, tmp_path("q4_k_m"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(*file->get_int("general.file_type"), 15);
  EXPECT_EQ(file->find_tensor("blk.3.attn_v.weight")->type, core::Type::kQ6_K);
  EXPECT_EQ(file->find_tensor("blk.4.attn_v.weight")->type, core::Type::kQ4_K);
  auto model = Model::load(tmp_path("q4_k_m"), memory::host_buffer_type());
  ASSERT_TRUE(model.ok()) << model.status().message();
}

}  // namespace
}  // namespace strata::model
