// Handles of the C API owned by the tests, so that a failed assertion frees them too.
#pragma once

#include <memory>
#include <string>

#include "strata.h"

namespace strata::capi::testing {

inline std::string stories_path() {
  return std::string(STRATA_SHARED_DIR) + "/models/stories260K.gguf";
}

struct ModelDeleter {
  void operator()(strata_model* m) const { strata_model_free(m); }
};
struct ContextDeleter {
  void operator()(strata_context* c) const { strata_context_free(c); }
};
struct SamplerDeleter {
  void operator()(strata_sampler* s) const { strata_sampler_free(s); }
};
using ModelPtr = std::unique_ptr<strata_model, ModelDeleter>;
using ContextPtr = std::unique_ptr<strata_context, ContextDeleter>;
using SamplerPtr = std::unique_ptr<strata_sampler, SamplerDeleter>;

/// stories260K with the given parameters (NULL: defaults), or null with the error recorded.
inline ModelPtr open_stories(const strata_model_params* params = nullptr) {
  strata_model* m = nullptr;
  if (strata_model_open(stories_path().c_str(), params, &m) != STRATA_OK) return nullptr;
  return ModelPtr(m);
}

inline ContextPtr make_context(strata_model* model, uint32_t n_ctx, int32_t n_threads = 1) {
  strata_context_params p;
  strata_context_params_init(&p);
  p.n_ctx = n_ctx;
  p.n_threads = n_threads;
  strata_context* c = nullptr;
  if (strata_context_create(model, &p, &c) != STRATA_OK) return nullptr;
  return ContextPtr(c);
}

}  // namespace strata::capi::testing
