// What the C API's opaque handles hold, and the guard every entry point runs its body in.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "core/status.h"
#include "engine/open.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "strata.h"

struct strata_model {
  strata::engine::OpenedModel opened;
  int n_threads = 1;  ///< contexts' default
};

struct strata_context {
  strata_model* model = nullptr;
  std::unique_ptr<strata::engine::Session> session;
  /// Rows the last successful decode kept: the session keeps its logits across reset().
  int64_t n_outputs = 0;
};

struct strata_sampler {
  std::optional<strata::engine::Sampler> sampler;
};

namespace strata::capi {

/// Records "`what`: `detail`" (or `what` alone when `detail` is empty) as this thread's last
/// error and returns `status`. Never throws or allocates: the message goes into a fixed
/// buffer, truncated if it must be.
strata_status fail(strata_status status, std::string_view what, std::string_view detail = {});
/// The C code of a Status, recording its message when it is an error.
strata_status from(const Status& st);

/// Runs `body` (returning strata_status), turning any exception into a status: nothing may
/// unwind through a C caller's frames.
template <typename F>
strata_status guarded(const char* function, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(STRATA_ERR_OUT_OF_MEMORY, function, "out of memory");
  } catch (const std::exception& e) {
    return fail(STRATA_ERR_INTERNAL, function, e.what());
  } catch (...) {
    return fail(STRATA_ERR_INTERNAL, function, "unknown exception");
  }
}

}  // namespace strata::capi
