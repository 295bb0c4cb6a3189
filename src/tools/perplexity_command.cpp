// `strata perplexity`: a model's perplexity on a text file, with llama-perplexity's output.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "devices/host_device.h"
#include "engine/perplexity.h"
#include "engine/session.h"
#include "gguf/file.h"
#include "model/model.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/layout_flags.h"
#include "tools/output.h"
#include "tools/session_checks.h"

namespace strata::tools {
namespace {

struct PerplexityOptions {
  std::string model;
  std::string file;
  int64_t ctx = 512;
  int64_t batch = 2048;
  int64_t ubatch = 512;
  int64_t threads = 0;
  bool flash_attn = false;
  bool help = false;
  LayoutOptions layout;
};

void add_flags(FlagSet& f, PerplexityOptions& o) {
  f.add_string({"-m", "--model"}, &o.model, "GGUF model file");
  f.add_string({"-f", "--file"}, &o.file, "text file to score");
  f.add_int({"-c", "--ctx-size"}, &o.ctx, "tokens per chunk (512)");
  f.add_int({"-b", "--batch-size"}, &o.batch, "tokens per decode call (2048)");
  f.add_int({"-ub", "--ubatch-size"}, &o.ubatch, "tokens per graph run (512)");
  f.add_int({"-t", "--threads"}, &o.threads, "worker threads (default: all cores)");
  f.add_bool({"-fa", "--flash-attn"}, &o.flash_attn, "fused attention (see strata run)");
  f.add_bool({"-h", "--help"}, &o.help, "show this help");
  add_layout_flags(f, o.layout);
}

Status invalid(const std::string& message) {
  return error(ErrorCode::kInvalidArgument, message);
}

Status validate(const PerplexityOptions& o) {
  if (o.model.empty()) return invalid("no model given: pass a GGUF file with -m FILE.gguf");
  if (o.file.empty()) return invalid("no text given: pass a text file with -f FILE");
  STRATA_RETURN_IF_ERROR(check_range("-c", o.ctx, 4, int64_t{1} << 24));
  STRATA_RETURN_IF_ERROR(check_range("-b", o.batch, 1, int64_t{1} << 24));
  STRATA_RETURN_IF_ERROR(check_range("-ub", o.ubatch, 1, int64_t{1} << 24));
  STRATA_RETURN_IF_ERROR(check_range("-t", o.threads, 0, 1024));
  return {};
}

Result<std::string> read_text(const std::string& path) {
  // Checked before opening: a FIFO would block the open, a directory would read as empty.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return error(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                 "cannot open text file " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    return error(ErrorCode::kIo, "cannot open text file " + path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(ErrorCode::kNotFound, "cannot open text file " + path);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return error(ErrorCode::kIo, "cannot read text file " + path);
  return s.str();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int perplexity_command(const std::vector<std::string>& args) {
  PerplexityOptions o;
  FlagSet flags;
  add_flags(flags, o);
  if (Status st = flags.parse(args); !st.ok()) return report_error("perplexity", st);
  if (o.help) {
    std::printf("usage: strata perplexity -m MODEL -f TEXT [flags]\n%s", flags.usage().c_str());
    return 0;
  }
  if (Status st = validate(o); !st.ok()) return report_error("perplexity", st);
  auto text = read_text(o.file);
  if (!text.ok()) return report_error("perplexity", text.status());

  engine::SessionParams sp;
  sp.n_ctx = o.ctx;
  sp.n_batch = std::min(o.batch, o.ctx);
  sp.n_ubatch = o.ubatch;
  sp.n_threads = o.threads > 0 ? static_cast<int>(o.threads) : devices::available_cores();
  sp.flash_attn = o.flash_attn;

  // The text's length is checked before the model and the session are made: the vocabulary
  // alone tokenizes it. load_with_layout checks the session's size before allocating.
  const auto t_tok = std::chrono::steady_clock::now();
  std::vector<int32_t> tokens;
  {
    auto file = gguf::File::open(o.model);
    if (!file.ok()) return report_error("perplexity", file.status());
    auto tokenizer = model::Tokenizer::from_gguf(*file);
    if (!tokenizer.ok()) return report_error("perplexity", tokenizer.status());
    tokens = tokenizer->encode(*text, /*add_special=*/true);
  }
  const double tokenize_s = seconds_since(t_tok);
  if (Status st = engine::check_text_length(static_cast<int64_t>(tokens.size()), o.ctx); !st.ok()) {
    return report_error("perplexity", st);
  }
  auto loaded = load_with_layout(o.model, o.layout, sp);
  if (!loaded.ok()) return report_error("perplexity", loaded.status());
  engine::Session* session = loaded->session.get();
  engine::PerplexityParams pp;
  pp.n_ctx = o.ctx;
  pp.n_batch = sp.n_batch;
  auto result =
      engine::compute_perplexity(*session, tokens, pp, [&](const engine::PerplexityChunk& c) {
        // Said once the run is known to go ahead, so that an error stays a single line.
        if (c.index == 0) {
          std::fprintf(stderr, "perplexity: tokenization took %.1f ms, %zu tokens\n",
                       tokenize_s * 1e3, tokens.size());
          std::fprintf(stderr,
                       "perplexity: calculating perplexity over %lld chunks, n_ctx=%lld, "
                       "batch_size=%lld, n_seq=1, %d threads\n",
                       static_cast<long long>(c.n_chunks), static_cast<long long>(o.ctx),
                       static_cast<long long>(sp.n_batch), sp.n_threads);
          const double eta = c.seconds * static_cast<double>(c.n_chunks);
          std::fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %d minutes %.2f seconds\n",
                       c.seconds, static_cast<int>(eta / 60.0),
                       eta - 60.0 * static_cast<int>(eta / 60.0));
        }
        std::printf("[%lld]%.4f,", static_cast<long long>(c.index + 1), c.ppl);
        (void)check_stdout();  // flushes; a failure is reported when the run ends
      });
  if (!result.ok()) return report_error("perplexity", result.status());
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", result->ppl, result->ppl_error);
  return 0;
}

}  // namespace strata::tools
