#include <algorithm>
#include <cstring>

#include "capi/handles.h"

namespace strata::capi {
namespace {

// A fixed buffer so that recording an error cannot itself fail (std::bad_alloc is one of the
// errors it records).
thread_local char last_error[1024] = "";

void append(size_t& at, std::string_view text) {
  const size_t n = std::min(text.size(), sizeof(last_error) - 1 - at);
  std::memcpy(last_error + at, text.data(), n);
  at += n;
}

strata_status code_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return STRATA_OK;
    case ErrorCode::kInvalidArgument:
      return STRATA_ERR_INVALID_ARGUMENT;
    case ErrorCode::kNotFound:
      return STRATA_ERR_NOT_FOUND;
    case ErrorCode::kIo:
      return STRATA_ERR_IO;
    case ErrorCode::kMalformed:
      return STRATA_ERR_MALFORMED;
    case ErrorCode::kUnsupported:
      return STRATA_ERR_UNSUPPORTED;
    case ErrorCode::kOutOfMemory:
      return STRATA_ERR_OUT_OF_MEMORY;
    case ErrorCode::kOutOfRange:
      return STRATA_ERR_OUT_OF_RANGE;
    case ErrorCode::kInternal:
      return STRATA_ERR_INTERNAL;
  }
  return STRATA_ERR_INTERNAL;
}

}  // namespace

strata_status fail(strata_status status, std::string_view what, std::string_view detail) {
  size_t at = 0;
  append(at, what);
  if (!detail.empty()) {
    append(at, ": ");
    append(at, detail);
  }
  last_error[at] = '\0';
  return status;
}

strata_status from(const Status& st) {
  if (st.ok()) return STRATA_OK;
  return fail(code_of(st.code()), st.message());
}

}  // namespace strata::capi

extern "C" {

const char* strata_version(void) {
  return STRATA_VERSION;
}

const char* strata_last_error(void) {
  return strata::capi::last_error;
}

const char* strata_status_name(strata_status status) {
  switch (status) {
    case STRATA_OK:
      return "STRATA_OK";
    case STRATA_ERR_INVALID_ARGUMENT:
      return "STRATA_ERR_INVALID_ARGUMENT";
    case STRATA_ERR_NOT_FOUND:
      return "STRATA_ERR_NOT_FOUND";
    case STRATA_ERR_IO:
      return "STRATA_ERR_IO";
    case STRATA_ERR_MALFORMED:
      return "STRATA_ERR_MALFORMED";
    case STRATA_ERR_UNSUPPORTED:
      return "STRATA_ERR_UNSUPPORTED";
    case STRATA_ERR_OUT_OF_MEMORY:
      return "STRATA_ERR_OUT_OF_MEMORY";
    case STRATA_ERR_OUT_OF_RANGE:
      return "STRATA_ERR_OUT_OF_RANGE";
    case STRATA_ERR_INTERNAL:
      return "STRATA_ERR_INTERNAL";
    case STRATA_ERR_BUFFER_TOO_SMALL:
      return "STRATA_ERR_BUFFER_TOO_SMALL";
  }
  return "STRATA_ERR_UNKNOWN";
}

}  // extern "C"
