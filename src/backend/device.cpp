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
  }
  return "unknown";
}

}  // namespace strata::backend
