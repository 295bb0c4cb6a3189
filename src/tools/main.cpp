#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "mpi/cluster.h"
#include "tools/commands.h"
#include "tools/output.h"

namespace {

void print_usage(FILE* to) {
  std::fputs(
      "usage: strata <command> [flags]\n"
      "commands:\n"
      "  run       generate text from a GGUF model (strata run -m MODEL -p PROMPT -n N)\n"
      "  inspect   print a GGUF file's metadata and tensor table (strata inspect MODEL)\n"
      "  synth     write a random-weight model (strata synth --preset P --type T -o OUT)\n"
      "  devices   list the devices (strata devices [--partitions N] [--device-mem 512M])\n"
      "  bench     measure prompt and generation speed (strata bench -m MODEL [-p 512] [-n 128])\n"
      "  perplexity  score a text file (strata perplexity -m MODEL -f TEXT [-c 512])\n"
      "  tokenize  show a text's tokens (strata tokenize -m MODEL -p TEXT [--ids] [--no-bos])\n"
      "  serve     an OpenAI-compatible HTTP server (strata serve -m MODEL [-np 4] [--port 8080])\n"
      "run 'strata <command> --help' for the flags of a command, 'strata --version' for the "
      "version\n",
      to);
}

int dispatch(const std::string& cmd, const std::vector<std::string>& args) {
  namespace tools = strata::tools;
  if (cmd == "run") return tools::run_command(args);
  if (cmd == "inspect") return tools::inspect_command(args);
  if (cmd == "synth") return tools::synth_command(args);
  if (cmd == "devices") return tools::devices_command(args);
  if (cmd == "bench") return tools::bench_command(args);
  if (cmd == "perplexity") return tools::perplexity_command(args);
  if (cmd == "tokenize") return tools::tokenize_command(args);
  if (cmd == "serve") return tools::serve_command(args);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    print_usage(stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("strata %s\n", STRATA_VERSION);
    return 0;
  }
  std::fprintf(stderr, "strata: unknown command '%s'\n", cmd.c_str());
  print_usage(stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every rank but 0 serves its CPU to rank 0 instead of running the command.
  auto served = strata::mpi::start(&argc, &argv);
  if (!served.ok()) return strata::tools::report_error("mpi", served.status());
  if (served->has_value()) return **served;
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  int rc = 1;
  // The commands return errors as values; these catch what the standard library throws where
  // no error value can be had (a thread or an allocation refused deep in a container), so
  // that it is still one line and exit code 1 rather than an abort.
  try {
    rc = dispatch(cmd, std::vector<std::string>(argv + 2, argv + argc));
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "strata %s: out of memory\n", cmd.c_str());
    rc = 1;
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "strata %s: %s\n", cmd.c_str(), e.what());
    rc = 1;
  }
  if (strata::Status st = strata::tools::check_stdout(); !st.ok()) {
    // A command that already failed has said why; its own exit code stands.
    if (rc == 0) rc = strata::tools::report_error(cmd.c_str(), st);
  }
  if (!strata::tools::stderr_ok() && rc == 0) rc = 1;
  strata::mpi::stop();
  return rc;
}
