// `strata serve`: the OpenAI-compatible HTTP server (src/serve) with the layout flags.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "devices/host_device.h"
#include "engine/chat.h"
#include "serve/server.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/layout_flags.h"

namespace strata::tools {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) {
  g_stop = true;
}

struct ServeCliOptions {
  std::string model;
  std::string host = "127.0.0.1";
  int64_t port = 8080;
  std::string api_key;
  int64_t parallel = 4;
  int64_t ctx = 4096;
  int64_t batch = 512;
  int64_t threads = 0;
  std::string chat_template;
  bool help = false;
  LayoutOptions layout;
};

void add_flags(FlagSet& f, ServeCliOptions& o) {
  f.add_string({"-m", "--model"}, &o.model, "GGUF model file");
  f.add_string({"--host"}, &o.host, "address to listen on (127.0.0.1)");
  f.add_int({"--port"}, &o.port, "port (8080; 0 picks a free one and prints it)");
  f.add_string({"--api-key"}, &o.api_key, "require 'Authorization: Bearer KEY'");
  f.add_int({"-np", "--parallel"}, &o.parallel, "slots: requests served at once (4)");
  f.add_int({"-c", "--ctx-size"}, &o.ctx, "context size shared by the slots (4096)");
  f.add_int({"-b", "--batch-size"}, &o.batch, "tokens one step evaluates at most (512)");
  f.add_int({"-t", "--threads"}, &o.threads, "worker threads (default: all cores)");
  f.add_string({"--chat-template"}, &o.chat_template,
               "Jinja chat template file (default: the model's, else ChatML)");
  f.add_bool({"-h", "--help"}, &o.help, "show this help");
  add_layout_flags(f, o.layout);
}

Status usage(const std::string& m) {
  return error(ErrorCode::kInvalidArgument, m);
}

}  // namespace

int serve_command(const std::vector<std::string>& args) {
  ServeCliOptions o;
  FlagSet flags;
  add_flags(flags, o);
  if (Status st = flags.parse(args); !st.ok()) return report_error("serve", st);
  if (o.help) {
    std::printf("usage: strata serve -m MODEL.gguf [flags]\n%s", flags.usage().c_str());
    return 0;
  }
  if (o.model.empty()) return report_error("serve", usage("no model given: pass -m FILE.gguf"));
  if (o.port < 0 || o.port > 65535)
    return report_error("serve", usage("--port must be in [0, 65535]"));
  if (o.parallel < 1 || o.parallel > 64)
    return report_error("serve", usage("-np must be in [1, 64]"));
  if (o.ctx < 32 || o.ctx > (int64_t{1} << 24))
    return report_error("serve", usage("-c must be in [32, 16M]"));
  if (o.batch < 1 || o.batch > (int64_t{1} << 20))
    return report_error("serve", usage("-b must be in [1, 1M]"));
  if (o.threads < 0 || o.threads > 1024)
    return report_error("serve", usage("-t must be in [0, 1024]"));
  std::string tmpl;
  if (!o.chat_template.empty()) {
    std::FILE* f = std::fopen(o.chat_template.c_str(), "rb");
    if (f == nullptr) {
      return report_error(
          "serve", error(ErrorCode::kNotFound, "cannot open chat template " + o.chat_template));
    }
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) tmpl.append(buf, n);
    std::fclose(f);
  }

  engine::SessionParams sp;
  sp.n_ctx = o.ctx;
  sp.n_batch = o.batch;
  sp.n_ubatch = std::min<int64_t>(o.batch, 512);
  sp.n_threads = o.threads > 0 ? static_cast<int>(o.threads) : devices::available_cores();
  auto loaded = load_with_layout(o.model, o.layout, sp);
  if (!loaded.ok()) return report_error("serve", loaded.status());

  if (tmpl.empty() && !engine::model_chat_template(*loaded->model).ok()) {
    std::fprintf(stderr,
                 "strata serve: warning: the model has no chat template; chat completions use "
                 "ChatML (pass --chat-template FILE to choose another)\n");
  }
  serve::ServeOptions so;
  so.host = o.host;
  so.port = static_cast<int>(o.port);
  so.api_key = o.api_key;
  so.n_slots = static_cast<int>(o.parallel);
  so.model_name = o.model.substr(o.model.find_last_of('/') + 1);
  so.chat_template = tmpl;
  auto server = serve::Server::create(*loaded->session, so);
  if (!server.ok()) return report_error("serve", server.status());

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // A client that goes away mid-write must not kill the server.
  std::signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "strata serve: listening on http://%s:%d (%d slots, %lld cells each)\n",
               o.host.c_str(), (*server)->port(), so.n_slots,
               static_cast<long long>(o.ctx / o.parallel));
  std::fflush(stderr);
  // Signals only set a flag; this thread turns it into a stop, outside the handler.
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done && !g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (g_stop) (*server)->stop();
  });
  const Status st = (*server)->run();
  done = true;
  watcher.join();
  if (!st.ok()) return report_error("serve", st);
  std::fprintf(stderr, "strata serve: stopped\n");
  return 0;
}

}  // namespace strata::tools
