#include "tools/session_checks.h"

#include <cstdio>

#include "devices/host_device.h"

namespace strata::tools {

void warn_session(const char* command, const model::Hparams& hp,
                  const engine::SessionParams& params) {
  const int cores = devices::available_cores();
  if (params.n_threads > cores) {
    std::fprintf(stderr,
                 "strata %s: warning: -t %d is more threads than the %d cores; the extra ones "
                 "wait for each other and slow every step down\n",
                 command, params.n_threads, cores);
  }
  if (params.n_ctx > hp.n_ctx_train && hp.n_ctx_train > 0) {
    std::fprintf(stderr,
                 "strata %s: warning: -c %lld is above the model's training context of %lld; "
                 "text past it may lose coherence\n",
                 command, static_cast<long long>(params.n_ctx),
                 static_cast<long long>(hp.n_ctx_train));
  }
}

}  // namespace strata::tools
