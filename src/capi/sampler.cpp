// Sampling: strata_sampler_* over engine::Sampler.
#include <cmath>
#include <string>

#include "capi/handles.h"

using strata::capi::fail;
using strata::capi::from;
using strata::capi::guarded;

extern "C" {

strata_status strata_sampler_params_init(strata_sampler_params* params) {
  if (params == nullptr)
    return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_sampler_params_init", "params is NULL");
  const strata::engine::SamplerParams d;
  params->temperature = d.temperature;
  params->top_k = d.top_k;
  params->top_p = d.top_p;
  params->min_p = d.min_p;
  params->repeat_penalty = d.repeat_penalty;
  params->repeat_last_n = d.repeat_last_n;
  params->seed = d.seed;
  return STRATA_OK;
}

strata_status strata_sampler_create(const strata_sampler_params* params, strata_sampler** sampler) {
  return guarded("strata_sampler_create", [&] {
    const char* fn = "strata_sampler_create";
    if (params == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "params is NULL");
    if (sampler == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "sampler is NULL");
    const strata_sampler_params& p = *params;
    // The same bounds as strata run's flags.
    if (!std::isfinite(p.temperature) || p.temperature < 0.0f)
      return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "temperature must be finite and not negative");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
      return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "top_p must be in (0, 1]");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
      return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "min_p must be in [0, 1]");
    if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty))
      return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "repeat_penalty must be positive");
    if (p.repeat_last_n < 0 || p.repeat_last_n > (1 << 20))
      return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "repeat_last_n must be in [0, 1048576]");
    strata::engine::SamplerParams sp;
    sp.temperature = p.temperature;
    sp.top_k = p.top_k;
    sp.top_p = p.top_p;
    sp.min_p = p.min_p;
    sp.repeat_penalty = p.repeat_penalty;
    sp.repeat_last_n = p.repeat_last_n;
    sp.seed = p.seed;
    auto handle = std::make_unique<strata_sampler>();
    handle->sampler.emplace(sp);
    *sampler = handle.release();
    return STRATA_OK;
  });
}

void strata_sampler_free(strata_sampler* sampler) {
  delete sampler;
}

strata_status strata_sampler_accept(strata_sampler* sampler, int32_t token) {
  return guarded("strata_sampler_accept", [&] {
    if (sampler == nullptr)
      return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_sampler_accept", "sampler is NULL");
    if (token < 0) {
      return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_sampler_accept",
                  "token id " + std::to_string(token) + " is negative");
    }
    sampler->sampler->accept(token);
    return STRATA_OK;
  });
}

strata_status strata_sample(strata_sampler* sampler, const strata_context* ctx, int64_t i,
                            int32_t* token) {
  return guarded("strata_sample", [&] {
    const char* fn = "strata_sample";
    if (sampler == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "sampler is NULL");
    if (token == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "token is NULL");
    const float* logits = nullptr;
    int32_t n_vocab = 0;
    if (strata_status st = strata_get_logits(ctx, i, &logits, &n_vocab); st != STRATA_OK) return st;
    *token = sampler->sampler->sample(std::span(logits, static_cast<size_t>(n_vocab)));
    return STRATA_OK;
  });
}

}  // extern "C"
