#include "tools/session_checks.h"

#include <cstdio>
#include <string>

#include "devices/host_device.h"

namespace strata::tools {
namespace {

Status check_cache_type(const char* flag, core::Type t, int64_t head_dim) {
  const int64_t block = core::block_size(t);
  if (head_dim % block == 0) return {};
  return error(ErrorCode::kInvalidArgument,
               std::string(flag) + " " + std::string(core::type_name(t)) +
                   " stores heads in blocks of " + std::to_string(block) +
                   " values, but this model's heads have " + std::to_string(head_dim) +
                   " (use f16)");
}

}  // namespace

Status check_session(const model::LlamaHparams& hp, const engine::SessionParams& params) {
  STRATA_RETURN_IF_ERROR(check_cache_type("--cache-type-k", params.type_k, hp.head_dim()));
  return check_cache_type("--cache-type-v", params.type_v, hp.head_dim());
}

void warn_session(const char* command, const model::LlamaHparams& hp,
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
