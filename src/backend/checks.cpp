#include "backend/checks.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "backend/device.h"

#include "memory/buffer.h"

namespace strata::backend {
namespace {

Status check_placed(const core::Tensor& t) {
  if (t.data == nullptr)
    return error(ErrorCode::kInternal, "tensor '" + t.name + "' is not placed");
  return {};
}

// Memory placed without a Buffer (a caller's pointer) is host memory by construction.
bool host_addressable(const core::Tensor& t) {
  return t.buffer == nullptr || static_cast<const memory::Buffer*>(t.buffer)->is_host();
}

}  // namespace

Status check_tensor_range(const core::Tensor& t, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(check_placed(t));
  if (offset > t.nbytes() || size > t.nbytes() - offset) {
    return error(ErrorCode::kInvalidArgument, "copy of " + std::to_string(size) + " bytes at " +
                                                  std::to_string(offset) + " is outside tensor '" +
                                                  t.name + "' (" + std::to_string(t.nbytes()) +
                                                  " bytes)");
  }
  return {};
}

Status check_host_copy(const core::Tensor& dst, const core::Tensor& src) {
  STRATA_RETURN_IF_ERROR(check_placed(dst));
  STRATA_RETURN_IF_ERROR(check_placed(src));
  // Every copy a scheduler queues passes here: the message is only built for a failure.
  const auto fail = [&](const char* why) {
    return error(ErrorCode::kInvalidArgument, "copy of '" + src.name + "' (" + core::describe(src) +
                                                  ") into '" + dst.name + "' (" +
                                                  core::describe(dst) + "): " + why);
  };
  if (dst.type != src.type || dst.ne != src.ne) return fail("types or shapes differ");
  if (!dst.is_contiguous() || !src.is_contiguous()) return fail("both must be contiguous");
  if (!host_addressable(dst)) return fail("the destination must be in host-addressable memory");
  return {};
}

Status copy_to_host(core::Tensor& dst, const core::Tensor& src) {
  if (host_addressable(src)) {
    std::memmove(dst.data, src.data, dst.nbytes());
    return {};
  }
  // Memory the host cannot address (another process's) is read through its buffer.
  return static_cast<const memory::Buffer*>(src.buffer)->read(src, dst.data, 0, dst.nbytes());
}

Status check_event_owner(const Device& device, const Event& event) {
  // A meta device has no queue of its own: its members' queues raise its events.
  if (&event.device() == &device || event.device().kind() == DeviceKind::kMeta) return {};
  return error(ErrorCode::kInvalidArgument,
               std::string(device.name()) + ": cannot signal an event of " +
                   std::string(event.device().name()) + " (signal it on its own device)");
}

Status wait_failure(const Device& device, const Event& event, uint64_t value, WaitResult result,
                    std::chrono::nanoseconds timeout) {
  std::string why;
  if (result == WaitResult::kStopped) {
    why = "was abandoned: the backend was destroyed";
  } else {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", std::chrono::duration<double>(timeout).count());
    why = std::string("timed out after ") + secs + " s (nobody signalled it)";
  }
  return error(ErrorCode::kInternal, std::string(device.name()) + ": wait for an event of " +
                                         std::string(event.device().name()) + " to reach " +
                                         std::to_string(value) + " " + why + "; its value is " +
                                         std::to_string(event.value()));
}

}  // namespace strata::backend
