#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "devices/host_device.h"
#include "engine/generate.h"
#include "engine/session.h"
#include "model/model.h"
#include "tools/attention_flags.h"
#include "tools/chat_loop.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/layout_flags.h"
#include "tools/output.h"
#include "tools/session_checks.h"

namespace strata::tools {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int64_t n_predict = 128;
  int64_t threads = 0;
  int64_t ctx = 0;
  int64_t batch = 2048;
  int64_t ubatch = 512;
  int64_t top_k = 40;
  int64_t repeat_last_n = 64;
  int64_t seed = -1;
  float temp = 0.8f;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  AttentionOptions attention;
  bool help = false;
  bool verbose = false;
  bool chat = false;
  std::string chat_template;
  LayoutOptions layout;
};

void add_flags(FlagSet& f, RunOptions& o) {
  f.add_string({"-m", "--model"}, &o.model, "GGUF model file");
  f.add_string({"-p", "--prompt"}, &o.prompt, "prompt text (with --chat: the system message)");
  f.add_bool({"--chat"}, &o.chat,
             "chat on the terminal: each stdin line is a user turn, each reply one stdout line");
  f.add_string({"--chat-template"}, &o.chat_template,
               "Jinja chat template file for --chat (default: the model's, else ChatML)");
  f.add_bool({"-v", "--verbose"}, &o.verbose,
             "after the run, print memory and paging figures (per device, plans, KV paging)");
  f.add_int({"-n", "--n-predict"}, &o.n_predict, "tokens to generate (-1: until end of text)");
  f.add_int({"-t", "--threads"}, &o.threads, "worker threads (default: all cores)");
  f.add_int({"-c", "--ctx-size"}, &o.ctx, "context size (0: the model's)");
  f.add_int({"-b", "--batch-size"}, &o.batch, "tokens per decode call (2048)");
  f.add_int({"-ub", "--ubatch-size"}, &o.ubatch, "tokens per graph run (512)");
  f.add_float({"--temp"}, &o.temp, "temperature; 0 is greedy (0.8)");
  f.add_int({"--top-k"}, &o.top_k, "top-k filter; 0 disables (40)");
  f.add_float({"--top-p"}, &o.top_p, "top-p filter; 1 disables (0.95)");
  f.add_float({"--min-p"}, &o.min_p, "min-p filter; 0 disables (0.05)");
  f.add_float({"--repeat-penalty"}, &o.repeat_penalty, "repetition penalty; 1 disables (1.0)");
  f.add_int({"--repeat-last-n"}, &o.repeat_last_n, "tokens the penalty looks back (64)");
  f.add_int({"-s", "--seed"}, &o.seed, "random seed (-1: random)");
  add_attention_flags(f, o.attention);
  f.add_bool({"-h", "--help"}, &o.help, "show this help");
  add_layout_flags(f, o.layout);
}

Status validate(const RunOptions& o) {
  if (o.model.empty()) {
    return error(ErrorCode::kInvalidArgument, "no model given: pass a GGUF file with -m FILE.gguf");
  }
  if (!o.chat_template.empty() && !o.chat) {
    return error(ErrorCode::kInvalidArgument, "--chat-template needs --chat");
  }
  STRATA_RETURN_IF_ERROR(check_range("-n", o.n_predict, -1, int64_t{1} << 30));
  STRATA_RETURN_IF_ERROR(check_range("-t", o.threads, 0, 1024));
  STRATA_RETURN_IF_ERROR(check_range("-c", o.ctx, 0, int64_t{1} << 24));
  STRATA_RETURN_IF_ERROR(check_range("-b", o.batch, 1, int64_t{1} << 20));
  STRATA_RETURN_IF_ERROR(check_range("-ub", o.ubatch, 1, int64_t{1} << 20));
  STRATA_RETURN_IF_ERROR(check_range("--top-k", o.top_k, 0, int64_t{1} << 30));
  STRATA_RETURN_IF_ERROR(check_range("--repeat-last-n", o.repeat_last_n, 0, int64_t{1} << 20));
  if (o.top_p <= 0.0f || o.top_p > 1.0f)
    return error(ErrorCode::kInvalidArgument, "--top-p must be in (0, 1]");
  if (o.min_p < 0.0f || o.min_p > 1.0f)
    return error(ErrorCode::kInvalidArgument, "--min-p must be in [0, 1]");
  if (o.temp < 0.0f) return error(ErrorCode::kInvalidArgument, "--temp must not be negative");
  if (o.repeat_penalty <= 0.0f)
    return error(ErrorCode::kInvalidArgument, "--repeat-penalty must be positive");
  return {};
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  FlagSet flags;
  add_flags(flags, o);
  if (Status st = flags.parse(args); !st.ok()) return report_error("run", st);
  if (o.help) {
    std::printf(
        "usage: strata run -m MODEL -p PROMPT [flags]\n"
        "       strata run -m MODEL --chat [--chat-template FILE] [-p SYSTEM] [flags]\n%s",
        flags.usage().c_str());
    return 0;
  }
  if (Status st = validate(o); !st.ok()) return report_error("run", st);
  // A template file is checked before the model loads, so that its errors come at once.
  if (o.chat && !o.chat_template.empty()) {
    if (auto t = load_chat_template(o.chat_template, nullptr); !t.ok())
      return report_error("run", t.status());
  }

  const auto t_load = std::chrono::steady_clock::now();
  engine::SessionParams sp;
  sp.n_ctx = o.ctx;
  sp.n_batch = o.batch;
  sp.n_ubatch = o.ubatch;
  sp.n_threads = o.threads > 0 ? static_cast<int>(o.threads) : devices::available_cores();
  if (Status st = apply_attention_flags(o.attention, sp); !st.ok()) return report_error("run", st);
  auto loaded = load_with_layout(o.model, o.layout, sp);
  if (!loaded.ok()) return report_error("run", loaded.status());
  auto& model = loaded->model;
  auto& session = loaded->session;
  warn_session("run", model->hparams(), sp);
  if (o.verbose) std::fputs(describe_shard_memory(*loaded).c_str(), stderr);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

  engine::GenerateParams gp;
  gp.prompt = o.prompt;
  gp.n_predict = static_cast<int32_t>(o.n_predict);
  gp.sampling.temperature = o.temp;
  gp.sampling.top_k = static_cast<int32_t>(o.top_k);
  gp.sampling.top_p = o.top_p;
  gp.sampling.min_p = o.min_p;
  gp.sampling.repeat_penalty = o.repeat_penalty;
  gp.sampling.repeat_last_n = static_cast<int32_t>(o.repeat_last_n);
  gp.sampling.seed =
      o.seed >= 0
          ? static_cast<uint64_t>(o.seed)
          : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());

  if (o.chat) {
    auto tmpl = load_chat_template(o.chat_template, model.get());
    if (!tmpl.ok()) return report_error("run", tmpl.status());
    const Status st = chat_loop(*session, std::move(*tmpl), o.prompt,
                                static_cast<int32_t>(o.n_predict), gp.sampling);
    if (!st.ok()) return report_error("run", st);
    return 0;
  }
  // The prompt is checked before it is echoed, so that an error is all a user sees.
  if (auto checked = engine::tokenize_prompt(*session, o.prompt); !checked.ok())
    return report_error("run", checked.status());
  if (Status st = write_stdout(o.prompt); !st.ok()) return report_error("run", st);
  auto stats = engine::generate(*session, gp, write_stdout);
  const Status newline = write_stdout("\n");
  if (!stats.ok()) return report_error("run", stats.status());
  if (!newline.ok()) return report_error("run", newline);

  if (stats->stop == engine::StopReason::kContextFull) {
    std::fprintf(stderr, "stopped: the context of %lld tokens is full (raise -c)\n",
                 static_cast<long long>(session->n_ctx()));
  }
  const auto rate = [](int64_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0.0; };
  std::fprintf(stderr, "load: %.1f ms (%s, %d threads, context %lld)\n", load_s * 1e3,
               memory::format_bytes(model->weight_bytes()).c_str(), sp.n_threads,
               static_cast<long long>(session->n_ctx()));
  std::fprintf(stderr, "prompt: %lld tokens in %.1f ms, %.2f tokens/s\n",
               static_cast<long long>(stats->n_prompt), stats->prompt_seconds * 1e3,
               rate(stats->n_prompt, stats->prompt_seconds));
  std::fprintf(stderr, "generation: %lld tokens in %.1f ms, %.2f tokens/s\n",
               static_cast<long long>(stats->n_generated), stats->generate_seconds * 1e3,
               rate(stats->n_generated, stats->generate_seconds));
  if (o.verbose) {
    const sched::Scheduler& sched = session->scheduler();
    std::fprintf(stderr, "memory: kv cache %s resident, compute buffers %s\n",
                 memory::format_bytes(session->cache().bytes()).c_str(),
                 memory::format_bytes(session->compute_buffer_bytes()).c_str());
    std::fprintf(stderr, "plans: %llu built, %llu reused\n",
                 static_cast<unsigned long long>(sched.plans_built()),
                 static_cast<unsigned long long>(sched.plans_reused()));
    if (session->cache().paging() != nullptr) {
      const engine::KvPagingStats kv = session->kv_paging_stats();
      std::fprintf(stderr,
                   "kv paging: home %s; kv_bytes_in %llu, kv_bytes_out %llu, %llu stalls, "
                   "stall_seconds %.6f\n",
                   session->cache().paging()->home->describe().c_str(),
                   static_cast<unsigned long long>(kv.bytes_in),
                   static_cast<unsigned long long>(kv.bytes_out),
                   static_cast<unsigned long long>(kv.stalls), kv.stall_seconds);
    }
    const model::WeightStream& stream = session->model().weights().stream;
    if (!stream.layers.empty()) {
      const engine::WeightStreamingStats ws = session->weight_stats();
      const std::string prefill = session->band_layers() > 0
                                      ? "banded, " + std::to_string(session->band_layers()) +
                                            (session->band_layers() == 1 ? " layer" : " layers") +
                                            " per band"
                                      : std::string("token-major");
      std::fprintf(stderr,
                   "weight streaming: %zu layers (%s) through %d slots of %s, prefill %s; "
                   "weight_bytes_read %llu, %llu stalls, stall_seconds %.6f\n",
                   stream.layers.size(), memory::format_bytes(stream.bytes()).c_str(),
                   stream.n_slots, memory::format_bytes(stream.slot_bytes).c_str(), prefill.c_str(),
                   static_cast<unsigned long long>(ws.bytes_read),
                   static_cast<unsigned long long>(ws.stalls), ws.stall_seconds);
    }
  }
  return 0;
}

}  // namespace strata::tools
