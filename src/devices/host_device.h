// The host CPU as a device: host memory, synchronous CPU backends.
#pragma once

#include "backend/device.h"

namespace strata::devices {

/// The whole host: all cores, all of RAM. Its backends compute in the caller's thread (with
/// their worker pool) and return when done; its events are signalled by those backends (at
/// once, everything before has completed) or by host threads.
class HostDevice final : public backend::Device {
 public:
  std::string_view name() const override { return "cpu"; }
  backend::DeviceKind kind() const override { return backend::DeviceKind::kCpu; }
  backend::DeviceMemory memory() const override;
  backend::DeviceCaps caps() const override { return {false, true, true}; }
  memory::BufferType& buffer_type() override { return memory::host_buffer_type(); }
  bool supports_op(const core::Tensor& node) const override;
  Result<std::unique_ptr<backend::Backend>> make_backend(
      const backend::BackendOptions& options) override;
  Result<std::unique_ptr<backend::Event>> make_event() override;
};

/// The process-wide host device.
HostDevice& host_device();

/// Logical cores available to this process.
int available_cores();

}  // namespace strata::devices
