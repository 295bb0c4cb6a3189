#include "model/synth/synth.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "gguf/writer.h"
#include "memory/buffer.h"
#include "model/synth/random.h"
#include "model/synth/recipe.h"
#include "model/synth/tensors.h"
#include "model/synth/vocab.h"

namespace strata::model {
namespace {

// Bytes of quantized rows produced per write. Large enough that thread start-up and write calls
// are noise, small enough that memory stays flat whatever the model.
constexpr size_t kChunkBytes = size_t{8} << 20;
// Bound on every dimension: keeps element counts and byte sizes far from int64 overflow and
// every metadata value within the u32 llama.cpp writes it as.
constexpr int64_t kMaxDim = int64_t{1} << 30;

Status invalid(std::string message) {
  return error(ErrorCode::kInvalidArgument, std::move(message));
}

Result<FileType> file_type(const std::string& name) {
  if (auto ft = find_file_type(name)) return *ft;
  std::string known;
  for (std::string_view n : file_type_names()) {
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  return invalid("unknown type '" + name + "' (known: " + known + ")");
}

// Checks the shape (all but n_vocab) and resolves n_rot.
Status check_shape(Hparams& hp) {
  const auto archs = synth_architectures();
  if (std::find(archs.begin(), archs.end(), hp.arch) == archs.end()) {
    return invalid("architecture '" + hp.arch + "' cannot be synthesized (llama, qwen2, qwen3)");
  }
  const std::pair<const char*, int64_t> dims[] = {
      {"n_embd", hp.n_embd},       {"n_layer", hp.n_layer}, {"n_head", hp.n_head},
      {"n_head_kv", hp.n_head_kv}, {"n_ff", hp.n_ff},       {"context length", hp.n_ctx_train}};
  for (const auto& [name, v] : dims) {
    if (v < 1 || v > kMaxDim) {
      return invalid(std::string(name) + " must be in [1, " + std::to_string(kMaxDim) + "], got " +
                     std::to_string(v));
    }
  }
  if (hp.n_embd % hp.n_head != 0) {
    return invalid("n_embd " + std::to_string(hp.n_embd) + " is not a multiple of n_head " +
                   std::to_string(hp.n_head));
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return invalid("n_head " + std::to_string(hp.n_head) + " is not a multiple of n_head_kv " +
                   std::to_string(hp.n_head_kv));
  }
  if (hp.n_rot == 0) hp.n_rot = hp.head_dim();
  if (hp.n_rot < 0 || hp.n_rot > hp.head_dim() || hp.n_rot % 2 != 0) {
    return invalid("RoPE dimension count " + std::to_string(hp.n_rot) +
                   " must be even and at most the head size " + std::to_string(hp.head_dim()));
  }
  if (!(hp.rms_eps > 0.0f) || !(hp.rope_freq_base > 0.0f)) {
    return invalid("RMS epsilon and RoPE base must be positive");
  }
  return {};
}

// The tokenizer metadata; settles n_vocab.
Result<SynthVocab> resolve_vocab(const SynthSpec& spec, Hparams& hp) {
  if (spec.vocab_path.empty()) {
    if (hp.n_vocab == 0) return invalid("no vocabulary size: give n_vocab or a vocabulary file");
    return make_spm_vocab(hp.n_vocab);
  }
  auto v = copy_vocab(spec.vocab_path);
  if (!v.ok()) return v.status();
  if (hp.n_vocab != 0 && hp.n_vocab != v->n_vocab) {
    return invalid("n_vocab " + std::to_string(hp.n_vocab) + " disagrees with the " +
                   std::to_string(v->n_vocab) + " tokens of '" + spec.vocab_path + "'");
  }
  hp.n_vocab = v->n_vocab;
  return v;
}

// Every type the plan needs must have a quantizer in this build; checked before the output
// file is created.
Status check_supported(const FileType& ft, const std::vector<SynthTensor>& tensors) {
  for (const SynthTensor& t : tensors) {
    if (core::traits(t.type).from_float != nullptr) continue;
    std::string message =
        "type '" + std::string(core::type_name(t.type)) + "' is not supported by this build";
    if (t.type != ft.base) message += " (" + std::string(ft.name) + " stores " + t.name + " in it)";
    return error(ErrorCode::kUnsupported, message);
  }
  return {};
}

Status add_metadata(gguf::Writer& w, const SynthSpec& spec, const Hparams& hp, const FileType& ft,
                    bool quantized, std::vector<gguf::KeyValue> tokenizer) {
  const auto u32 = [](int64_t v) { return gguf::make_value(static_cast<uint32_t>(v)); };
  const std::string a = hp.arch + ".";
  std::vector<gguf::KeyValue> kvs = {
      {"general.architecture", gguf::make_string(hp.arch)},
      {"general.name", gguf::make_string(spec.name)},
      {"general.file_type", gguf::make_value(ft.ftype)},
      {a + "vocab_size", u32(hp.n_vocab)},
      {a + "context_length", u32(hp.n_ctx_train)},
      {a + "embedding_length", u32(hp.n_embd)},
      {a + "block_count", u32(hp.n_layer)},
      {a + "feed_forward_length", u32(hp.n_ff)},
      {a + "attention.head_count", u32(hp.n_head)},
      {a + "attention.head_count_kv", u32(hp.n_head_kv)},
      {a + "attention.layer_norm_rms_epsilon", gguf::make_value(hp.rms_eps)},
      {a + "rope.freq_base", gguf::make_value(hp.rope_freq_base)},
      {a + "rope.dimension_count", u32(hp.n_rot)},
  };
  // The version of the quantized block layouts (llama.cpp's GGML_QNT_VERSION).
  if (quantized) kvs.push_back({"general.quantization_version", gguf::make_value(uint32_t{2})});
  for (gguf::KeyValue& kv : tokenizer) kvs.push_back(std::move(kv));
  for (gguf::KeyValue& kv : kvs) {
    STRATA_RETURN_IF_ERROR(w.add_metadata(std::move(kv.key), std::move(kv.value)));
  }
  return {};
}

// Draws rows [first_row, first_row + n_rows) of `t` and stores them in its type at `out`.
void fill_rows(const SynthTensor& t, uint64_t key, int64_t first_row, int64_t n_rows,
               uint8_t* out) {
  const int64_t n = t.ne[0];
  const size_t row_bytes = core::row_size(t.type, n);
  const core::FromFloatFn from_float = core::traits(t.type).from_float;
  std::vector<float> row(static_cast<size_t>(n), 1.0f);
  for (int64_t r = 0; r < n_rows; ++r) {
    if (t.stddev != 0.0f) {
      synth_normal(key, static_cast<uint64_t>((first_row + r) * n), t.stddev, row);
    }
    from_float(row.data(), out + static_cast<size_t>(r) * row_bytes, n);
  }
}

// fill_rows over `n_threads` threads, each taking a contiguous share of the rows.
void fill_rows_parallel(const SynthTensor& t, uint64_t key, int64_t first_row, int64_t n_rows,
                        uint8_t* out, int n_threads) {
  const size_t row_bytes = core::row_size(t.type, t.ne[0]);
  const int64_t n_parts = std::min<int64_t>(n_threads, n_rows);
  auto part = [&](int64_t i) {
    const int64_t begin = n_rows * i / n_parts, end = n_rows * (i + 1) / n_parts;
    fill_rows(t, key, first_row + begin, end - begin, out + static_cast<size_t>(begin) * row_bytes);
  };
  std::vector<std::jthread> workers;
  for (int64_t i = 1; i < n_parts; ++i) {
    try {
      workers.emplace_back(part, i);
    } catch (const std::system_error&) {
      part(i);  // no thread to be had: do that share here
    }
  }
  part(0);
}

Status write_tensor(gguf::Writer& w, const SynthTensor& t, uint64_t seed, int n_threads) {
  const int64_t n_rows = t.n_elements() / t.ne[0];
  const size_t row_bytes = core::row_size(t.type, t.ne[0]);
  const int64_t rows_per_chunk =
      std::clamp<int64_t>(static_cast<int64_t>(kChunkBytes / row_bytes), 1, n_rows);
  std::vector<uint8_t> chunk(static_cast<size_t>(rows_per_chunk) * row_bytes);
  const uint64_t key = synth_stream_key(seed, t.name);
  for (int64_t r = 0; r < n_rows; r += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, n_rows - r);
    fill_rows_parallel(t, key, r, rows, chunk.data(), n_threads);
    STRATA_RETURN_IF_ERROR(
        w.write_tensor_data(chunk.data(), static_cast<size_t>(rows) * row_bytes));
  }
  return {};
}

// The tensor data alone, before metadata and alignment padding: a lower bound on the file.
double tensor_bytes(const std::vector<SynthTensor>& tensors) {
  double total = 0.0;
  for (const SynthTensor& t : tensors) {
    total += static_cast<double>(core::row_size(t.type, t.ne[0])) *
             static_cast<double>(t.n_elements() / t.ne[0]);
  }
  return std::min(total, 1.8e19);  // stays within size_t for the message
}

// Refuses a file larger than the free space of the disk it goes to, before writing a byte.
Status check_disk_space(const std::string& path, double need) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return {};  // the open that follows says what is wrong
  const double free = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (need <= free) return {};
  return error(ErrorCode::kIo, "cannot write '" + path + "': the model needs " +
                                   memory::format_bytes(static_cast<size_t>(need)) +
                                   " but the disk has " +
                                   memory::format_bytes(static_cast<size_t>(free)) + " free");
}

}  // namespace

std::vector<std::string> synth_architectures() {
  return {"llama", "qwen2", "qwen3"};
}

Status write_synthetic_model(const SynthSpec& spec, const std::string& path) {
  auto ft = file_type(spec.type);
  if (!ft.ok()) return ft.status();
  if (spec.n_threads < 0) return invalid("thread count must not be negative");
  Hparams hp = spec.hparams;
  STRATA_RETURN_IF_ERROR(check_shape(hp));
  // A made-up vocabulary of millions of tokens takes seconds to build: with the size known
  // already, an impossible file is refused before that.
  if (spec.vocab_path.empty()) {
    STRATA_RETURN_IF_ERROR(check_disk_space(path, tensor_bytes(plan_tensors(hp, *ft))));
  }
  auto vocab = resolve_vocab(spec, hp);
  if (!vocab.ok()) return vocab.status();
  const std::vector<SynthTensor> tensors = plan_tensors(hp, *ft);
  STRATA_RETURN_IF_ERROR(check_supported(*ft, tensors));
  STRATA_RETURN_IF_ERROR(check_disk_space(path, tensor_bytes(tensors)));

  gguf::Writer w;
  const bool quantized = std::any_of(tensors.begin(), tensors.end(), [](const SynthTensor& t) {
    return core::is_quantized(t.type);
  });
  STRATA_RETURN_IF_ERROR(add_metadata(w, spec, hp, *ft, quantized, std::move(vocab->metadata)));
  for (const SynthTensor& t : tensors) STRATA_RETURN_IF_ERROR(w.add_tensor(t.name, t.type, t.ne));
  STRATA_RETURN_IF_ERROR(w.begin(path));
  const int n_threads = spec.n_threads > 0
                            ? spec.n_threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (const SynthTensor& t : tensors) {
    STRATA_RETURN_IF_ERROR(write_tensor(w, t, spec.seed, n_threads));
  }
  return w.finish();
}

}  // namespace strata::model
