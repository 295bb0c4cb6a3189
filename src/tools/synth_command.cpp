#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "devices/host_device.h"
#include "gguf/file.h"
#include "memory/buffer.h"
#include "model/synth/recipe.h"
#include "model/synth/synth.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace strata::tools {
namespace {

// Marks a shape flag that was not given, so the preset's value stands.
constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();

struct SynthOptions {
  std::string preset;
  std::string type;
  std::string output;
  std::string vocab;
  std::string name;
  std::string arch;
  int64_t seed = 0;
  int64_t threads = 0;
  int64_t n_embd = kUnset, n_layer = kUnset, n_head = kUnset, n_head_kv = kUnset;
  int64_t n_ff = kUnset, n_vocab = kUnset, ctx = kUnset;
  bool help = false;
};

std::string join(const std::vector<std::string_view>& names) {
  std::string s;
  for (std::string_view n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

void add_flags(FlagSet& f, SynthOptions& o) {
  f.add_string({"--preset"}, &o.preset, "model shape: " + join(model::synth_preset_names()));
  f.add_string({"--type"}, &o.type,
               "weight format; plain types store every matrix in that type, q*_k_s/m/l are "
               "llama.cpp's mixes");
  f.add_string({"-o", "--output"}, &o.output, "GGUF file to write");
  f.add_string({"--vocab"}, &o.vocab,
               "copy the tokenizer from this GGUF file (sets the vocabulary size)");
  f.add_int({"-s", "--seed"}, &o.seed, "random seed; same seed, same file (0)");
  f.add_string({"--name"}, &o.name, "general.name (default: the preset's name)");
  f.add_string({"--arch"}, &o.arch,
               "architecture of the preset's shape: llama, qwen2 or qwen3 (default: the preset's)");
  f.add_int({"-t", "--threads"}, &o.threads, "threads (default: all cores)");
  f.add_int({"--n-embd"}, &o.n_embd, "override the embedding width");
  f.add_int({"--n-layer"}, &o.n_layer, "override the number of layers");
  f.add_int({"--n-head"}, &o.n_head, "override the number of attention heads");
  f.add_int({"--n-head-kv"}, &o.n_head_kv, "override the number of KV heads");
  f.add_int({"--n-ff"}, &o.n_ff, "override the FFN width");
  f.add_int({"--n-vocab"}, &o.n_vocab, "override the vocabulary size");
  f.add_int({"-c", "--ctx"}, &o.ctx, "override the training context length");
  f.add_bool({"-h", "--help"}, &o.help, "show this help");
}

Status usage_error(const std::string& message) {
  return error(ErrorCode::kInvalidArgument, message);
}

// The spec the flags describe: the preset's shape with the overrides applied.
Result<model::SynthSpec> make_spec(const SynthOptions& o) {
  if (o.preset.empty()) {
    return usage_error("no preset: pass --preset (" + join(model::synth_preset_names()) + ")");
  }
  if (o.type.empty()) {
    return usage_error("no type: pass --type (" + join(model::file_type_names()) + ")");
  }
  if (o.output.empty()) return usage_error("no output file: pass -o FILE.gguf");
  auto hp = model::synth_preset(o.preset);
  if (!hp.ok()) return hp.status();
  struct Override {
    const char* flag;
    int64_t value;
    int64_t* field;
  };
  const Override overrides[] = {
      {"--n-embd", o.n_embd, &hp->n_embd}, {"--n-layer", o.n_layer, &hp->n_layer},
      {"--n-head", o.n_head, &hp->n_head}, {"--n-head-kv", o.n_head_kv, &hp->n_head_kv},
      {"--n-ff", o.n_ff, &hp->n_ff},       {"--n-vocab", o.n_vocab, &hp->n_vocab},
      {"--ctx", o.ctx, &hp->n_ctx_train},
  };
  // With a vocabulary file, its size stands unless --n-vocab says otherwise (then they must agree).
  if (!o.vocab.empty()) hp->n_vocab = 0;
  for (const Override& ov : overrides) {
    if (ov.value == kUnset) continue;
    if (ov.value < 1) return usage_error(std::string(ov.flag) + " must be positive");
    *ov.field = ov.value;
  }
  if (!o.arch.empty()) {
    const auto archs = model::synth_architectures();
    if (std::find(archs.begin(), archs.end(), o.arch) == archs.end()) {
      return usage_error("--arch " + o.arch + " is not one of llama, qwen2, qwen3");
    }
    hp->arch = o.arch;
  }
  // A narrower head changes the rotated width with it.
  hp->n_rot = 0;
  if (o.threads < 0 || o.threads > 4096) return usage_error("-t must be in [0, 4096]");
  model::SynthSpec spec;
  spec.name = o.name.empty() ? o.preset : o.name;
  spec.hparams = *hp;
  spec.type = o.type;
  spec.seed = static_cast<uint64_t>(o.seed);
  spec.vocab_path = o.vocab;
  spec.n_threads = o.threads > 0 ? static_cast<int>(o.threads) : devices::available_cores();
  return spec;
}

// The file being written, for the signal handler: an interrupted synth leaves no partial file.
// A fixed buffer, since the handler may only call async-signal-safe functions such as unlink.
char g_partial_path[4096] = {};

extern "C" void remove_partial_and_exit(int sig) {
  if (g_partial_path[0] != '\0') ::unlink(g_partial_path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Writes to OUT.partial and renames it to OUT once complete, so OUT is never half a model.
Status write_model(const model::SynthSpec& spec, const std::string& out) {
  const std::string partial = out + ".partial";
  if (partial.size() >= sizeof g_partial_path) return usage_error("output path too long: " + out);
  std::memcpy(g_partial_path, partial.c_str(), partial.size() + 1);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, remove_partial_and_exit);
  Status st = model::write_synthetic_model(spec, partial);
  if (st.ok() && std::rename(partial.c_str(), out.c_str()) != 0) {
    st = error(ErrorCode::kIo,
               "cannot rename '" + partial + "' to '" + out + "': " + std::strerror(errno));
    ::unlink(partial.c_str());
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  g_partial_path[0] = '\0';
  return st;
}

// "1.10B", "15.2M": parameters the way model cards count them.
std::string format_count(int64_t n) {
  char buf[32];
  if (n >= 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%.2fB", static_cast<double>(n) / 1e9);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1fM", static_cast<double>(n) / 1e6);
  }
  return buf;
}

// One line about the file written, read back from it (which also proves it opens).
Status print_summary(const std::string& path, const model::SynthSpec& spec, double seconds) {
  auto file = gguf::File::open(path);
  if (!file.ok()) return file.status().with_context("reading back the written file");
  int64_t params = 0;
  std::map<std::string, int> by_type;
  for (const gguf::TensorInfo& t : file->tensors()) {
    params += t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    ++by_type[std::string(core::type_name(t.type))];
  }
  std::string types;
  for (const auto& [type, n] : by_type) {
    types += (types.empty() ? "" : ", ") + std::to_string(n) + " " + type;
  }
  std::printf("strata synth: wrote %s: %s %s, %s parameters, %s (%zu tensors: %s) in %.1f s\n",
              path.c_str(), spec.name.c_str(), spec.type.c_str(), format_count(params).c_str(),
              memory::format_bytes(file->file_size()).c_str(), file->tensors().size(),
              types.c_str(), seconds);
  return {};
}

}  // namespace

int synth_command(const std::vector<std::string>& args) {
  SynthOptions o;
  FlagSet flags;
  add_flags(flags, o);
  if (Status st = flags.parse(args); !st.ok()) return report_error("synth", st);
  if (o.help) {
    std::printf(
        "usage: strata synth --preset NAME --type TYPE -o OUT.gguf [flags]\n"
        "writes a model of the preset's shape and architecture with random weights, for "
        "benchmarks\n"
        "and tests\n"
        "types: %s\n%s",
        join(model::file_type_names()).c_str(), flags.usage().c_str());
    return 0;
  }
  auto spec = make_spec(o);
  if (!spec.ok()) return report_error("synth", spec.status());
  const auto start = std::chrono::steady_clock::now();
  if (Status st = write_model(*spec, o.output); !st.ok()) {
    return report_error("synth", st);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (Status st = print_summary(o.output, *spec, seconds); !st.ok()) {
    return report_error("synth", st);
  }
  return 0;
}

}  // namespace strata::tools
