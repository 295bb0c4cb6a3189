#include "engine/session_checks.h"

#include <algorithm>
#include <string>

#include "memory/buffer.h"

namespace strata::engine {
namespace {

int64_t context_of(const model::Hparams& hp, const SessionParams& params) {
  return params.n_ctx > 0 ? params.n_ctx : hp.n_ctx_train;
}

// Saturating arithmetic in double: the sizes checked here may be absurd on purpose.
size_t to_bytes(double b) {
  constexpr double kMax = 1.8e19;
  return b >= kMax ? static_cast<size_t>(kMax) : static_cast<size_t>(b);
}

double kv_bytes(const model::Hparams& hp, const SessionParams& params) {
  const double cells = static_cast<double>(context_of(hp, params));
  const auto row = [&](core::Type t) {
    return static_cast<double>(core::type_size(t)) * static_cast<double>(hp.n_embd_kv()) /
           static_cast<double>(core::block_size(t));
  };
  return static_cast<double>(hp.n_layer) * cells * (row(params.type_k) + row(params.type_v));
}

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

size_t estimate_session_bytes(const model::Hparams& hp, const SessionParams& params) {
  double bytes = kv_bytes(hp, params);
  // With KV paging to a file, memory holds only the resident slots.
  const KvPagingConfig& paging = params.kv_paging;
  if (paging.enabled() && !paging.home_file.empty()) {
    bytes = paging.resident_fraction > 0
                ? bytes * paging.resident_fraction
                : std::min(bytes, static_cast<double>(paging.resident_bytes));
  }
  if (!params.flash_attn) {
    const int64_t n_ctx = context_of(hp, params);
    const int64_t n_ubatch = std::min({params.n_ubatch, params.n_batch, n_ctx});
    bytes += 4.0 * static_cast<double>(n_ctx) * static_cast<double>(n_ubatch) *
             static_cast<double>(hp.n_head);
  }
  return to_bytes(bytes);
}

Status check_session(const model::Hparams& hp, const SessionParams& params, size_t memory_total) {
  STRATA_RETURN_IF_ERROR(check_cache_type("--cache-type-k", params.type_k, hp.head_dim()));
  STRATA_RETURN_IF_ERROR(check_cache_type("--cache-type-v", params.type_v, hp.head_dim()));
  const size_t need = estimate_session_bytes(hp, params);
  if (memory_total != 0 && need > memory_total) {
    return error(ErrorCode::kOutOfMemory,
                 "a context of " + std::to_string(context_of(hp, params)) + " tokens needs " +
                     memory::format_bytes(to_bytes(kv_bytes(hp, params))) +
                     " of KV cache and at least " + memory::format_bytes(need) +
                     " in all, more than this machine's " + memory::format_bytes(memory_total) +
                     " (lower -c)");
  }
  return {};
}

}  // namespace strata::engine
