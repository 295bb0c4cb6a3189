#include "backend/device.h"

namespace strata::backend {

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kPartition:
      return "partition";
    case DeviceKind::kGpu:
      return "gpu";
    case DeviceKind::kMeta:
      return "meta";
    case DeviceKind::kRemote:
      return "remote";
  }
  return "unknown";
}

Result<std::unique_ptr<Event>> Device::make_event() {
  return error(ErrorCode::kUnsupported, std::string(name()) + ": device has no events");
}

Result<std::unique_ptr<Collective>> Device::make_collective(const std::vector<Device*>&) {
  return error(ErrorCode::kUnsupported,
               std::string(name()) + ": device makes no all-reduce groups");
}

Status Backend::all_reduce_async(Collective&, int, const core::Tensor&, core::Tensor&) {
  return error(ErrorCode::kUnsupported,
               std::string(device().name()) + ": this queue takes no part in all-reduces");
}

}  // namespace strata::backend
