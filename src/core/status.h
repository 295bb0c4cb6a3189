// Errors as values: Status for operations that return nothing, Result<T> for those that
// return a value. Every message starts with what failed, so a caller can print it as one line.
#pragma once

#include <cassert>
#include <new>
#include <string>
#include <utility>
#include <variant>

namespace strata {

/// Broad category of a failure; lets callers pick an exit code or retry policy.
enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  ///< bad flag, bad shape, bad parameter
  kNotFound,         ///< missing file, tensor or key
  kIo,               ///< the OS refused a read, write or map
  kMalformed,        ///< input data (a GGUF file, a JSON body) is corrupt or hostile
  kUnsupported,      ///< valid input this build cannot run (architecture, type, op)
  kOutOfMemory,      ///< an allocation or a device memory budget failed
  kOutOfRange,       ///< context overflow and similar capacity limits
  kInternal,         ///< a broken invariant reported instead of crashing
};

/// Outcome of an operation: ok, or a code plus a one-line message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  /// Lets STRATA_RETURN_IF_ERROR treat a Status and a Result alike.
  const Status& status() const { return *this; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Returns a copy whose message is prefixed with `context: `.
  Status with_context(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status error(ErrorCode code, std::string message) {
  return Status(code, std::move(message));
}

/// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like std::expected
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

/// Runs `body` (returning a Status or a Result) and turns a std::bad_alloc thrown by a container
/// or `new` inside it into kOutOfMemory ("`what`: out of memory"). This is where allocation
/// failures become error values; undoing what the interrupted body did is the caller's part.
template <typename F>
auto out_of_memory_as_error(const char* what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return error(ErrorCode::kOutOfMemory, std::string(what) + ": out of memory");
  }
}

}  // namespace strata

/// Propagates a failed Status (or the status of a failed Result) to the caller.
#define STRATA_RETURN_IF_ERROR(expr)                          \
  do {                                                        \
    auto&& strata_status_ = (expr);                           \
    if (!strata_status_.ok()) return strata_status_.status(); \
  } while (0)
