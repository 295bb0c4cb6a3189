// Contexts: strata_context_*, strata_decode and strata_get_logits over engine::Session.
#include <algorithm>
#include <span>
#include <string>

#include "capi/handles.h"

namespace strata::capi {
namespace {

constexpr uint32_t kMaxContext = 1u << 24;
constexpr uint32_t kMaxBatch = 1u << 20;

Result<core::Type> cache_type(strata_cache_type t, const char* field) {
  switch (t) {
    case STRATA_CACHE_F32:
      return core::Type::kF32;
    case STRATA_CACHE_F16:
      return core::Type::kF16;
    case STRATA_CACHE_BF16:
      return core::Type::kBF16;
    case STRATA_CACHE_Q8_0:
      return core::Type::kQ8_0;
  }
  return error(ErrorCode::kInvalidArgument, std::string("strata_context_create: unknown ") + field +
                                                " " + std::to_string(static_cast<int>(t)));
}

Result<engine::SessionParams> session_params(const strata_context_params& p,
                                             const strata_model& model) {
  const auto bad = [](const std::string& what) {
    return error(ErrorCode::kInvalidArgument, "strata_context_create: " + what);
  };
  if (p.n_ctx > kMaxContext) return bad("n_ctx must be at most 16777216");
  if (p.n_batch < 1 || p.n_batch > kMaxBatch) return bad("n_batch must be in [1, 1048576]");
  if (p.n_ubatch < 1 || p.n_ubatch > kMaxBatch) return bad("n_ubatch must be in [1, 1048576]");
  if (p.n_threads < 0 || p.n_threads > 1024) return bad("n_threads must be in [0, 1024]");
  engine::SessionParams sp;
  sp.n_ctx = p.n_ctx;
  sp.n_batch = p.n_batch;
  sp.n_ubatch = p.n_ubatch;
  sp.n_threads = p.n_threads > 0 ? p.n_threads : model.n_threads;
  auto k = cache_type(p.type_k, "type_k");
  if (!k.ok()) return k.status();
  auto v = cache_type(p.type_v, "type_v");
  if (!v.ok()) return v.status();
  sp.type_k = *k;
  sp.type_v = *v;
  sp.flash_attn = p.flash_attn;
  return sp;
}

}  // namespace
}  // namespace strata::capi

using strata::capi::fail;
using strata::capi::from;
using strata::capi::guarded;

extern "C" {

strata_status strata_context_params_init(strata_context_params* params) {
  if (params == nullptr)
    return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_context_params_init", "params is NULL");
  *params = strata_context_params{};
  params->n_batch = 2048;
  params->n_ubatch = 512;
  params->type_k = STRATA_CACHE_F16;
  params->type_v = STRATA_CACHE_F16;
  return STRATA_OK;
}

strata_status strata_context_create(strata_model* model, const strata_context_params* params,
                                    strata_context** ctx) {
  return guarded("strata_context_create", [&] {
    const char* fn = "strata_context_create";
    if (ctx == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "ctx is NULL");
    if (model == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "model is NULL");
    strata_context_params p;
    (void)strata_context_params_init(&p);
    if (params != nullptr) p = *params;
    auto sp = strata::capi::session_params(p, *model);
    if (!sp.ok()) return from(sp.status());
    auto session = strata::engine::open_session(model->opened, *sp);
    if (!session.ok()) return from(session.status());
    auto handle = std::make_unique<strata_context>();
    handle->model = model;
    handle->session = std::move(session).value();
    *ctx = handle.release();
    return STRATA_OK;
  });
}

void strata_context_free(strata_context* ctx) {
  delete ctx;
}

int64_t strata_context_n_ctx(const strata_context* ctx) {
  return ctx != nullptr ? ctx->session->n_ctx() : -1;
}

int64_t strata_context_n_past(const strata_context* ctx) {
  return ctx != nullptr ? ctx->session->n_past() : -1;
}

int64_t strata_context_n_outputs(const strata_context* ctx) {
  return ctx != nullptr ? ctx->n_outputs : -1;
}

strata_status strata_context_reset(strata_context* ctx) {
  return guarded("strata_context_reset", [&] {
    if (ctx == nullptr)
      return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_context_reset", "ctx is NULL");
    ctx->session->reset();
    ctx->n_outputs = 0;
    return STRATA_OK;
  });
}

strata_status strata_decode(strata_context* ctx, const int32_t* tokens, size_t n, bool all_logits) {
  return guarded("strata_decode", [&] {
    const char* fn = "strata_decode";
    if (ctx == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "ctx is NULL");
    if (tokens == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "tokens is NULL");
    if (n == 0) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "no tokens");
    strata::engine::Session& s = *ctx->session;
    // Checked up front, so that a batch split into pieces fails before the first one runs.
    if (n > static_cast<size_t>(s.n_ctx() - s.n_past())) {
      return fail(STRATA_ERR_OUT_OF_RANGE, fn,
                  "context overflow: " + std::to_string(s.n_past()) + " cached + " +
                      std::to_string(n) + " new tokens exceed the context size of " +
                      std::to_string(s.n_ctx()));
    }
    const int32_t n_vocab = s.model().tokenizer().n_vocab();
    for (size_t i = 0; i < n; ++i) {
      if (tokens[i] < 0 || tokens[i] >= n_vocab) {
        return fail(STRATA_ERR_INVALID_ARGUMENT, fn,
                    "token id " + std::to_string(tokens[i]) + " at " + std::to_string(i) +
                        " is outside the vocabulary of " + std::to_string(n_vocab));
      }
    }
    const auto batch = static_cast<size_t>(s.n_batch());
    if (all_logits && n > batch) {
      return fail(
          STRATA_ERR_INVALID_ARGUMENT, fn,
          std::to_string(n) + " tokens with all_logits exceed n_batch " + std::to_string(batch));
    }
    for (size_t i = 0; i < n; i += batch) {
      const size_t len = std::min(batch, n - i);
      if (strata::Status st = s.decode(std::span(tokens + i, len), all_logits); !st.ok()) {
        // The pieces before this one stay in the cache, but their logits are gone.
        if (i > 0) ctx->n_outputs = 0;
        return from(st);
      }
    }
    ctx->n_outputs = s.n_outputs();
    return STRATA_OK;
  });
}

strata_status strata_get_logits(const strata_context* ctx, int64_t i, const float** logits,
                                int32_t* n_vocab) {
  return guarded("strata_get_logits", [&] {
    const char* fn = "strata_get_logits";
    if (ctx == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "ctx is NULL");
    if (logits == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "logits is NULL");
    const int64_t rows = ctx->n_outputs;
    const int64_t row = i < 0 ? i + rows : i;
    if (row < 0 || row >= rows) {
      return fail(STRATA_ERR_OUT_OF_RANGE, fn,
                  "row " + std::to_string(i) + " is not among the " + std::to_string(rows) +
                      " rows the last decode kept");
    }
    const std::span<const float> r = ctx->session->logits(row);
    if (r.empty()) return fail(STRATA_ERR_INTERNAL, fn, "the session has no logits for the row");
    *logits = r.data();
    if (n_vocab != nullptr) *n_vocab = static_cast<int32_t>(r.size());
    return STRATA_OK;
  });
}

}  // extern "C"
