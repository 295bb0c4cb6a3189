// A device: something that holds memory and runs backends.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/collective.h"
#include "backend/event.h"
#include "core/status.h"
#include "core/tensor.h"
#include "memory/buffer.h"

namespace strata::backend {

/// kRemote: a device of another process (an MPI rank), whose memory the host cannot address.
enum class DeviceKind { kCpu, kPartition, kGpu, kMeta, kRemote };

std::string_view device_kind_name(DeviceKind kind);

/// Memory a device reports, in bytes.
struct DeviceMemory {
  size_t free = 0;
  size_t total = 0;
};

/// What a device can do beyond computing.
struct DeviceCaps {
  bool async = false;         ///< backends queue work and return before it completes
  bool events = false;        ///< supports timeline events
  bool host_buffers = false;  ///< its buffers are addressable by the host
};

/// Options for a new backend.
struct BackendOptions {
  /// Worker threads of a host CPU backend. A partition always computes with one thread per
  /// core of its own and ignores this.
  int n_threads = 1;
  /// Longest a queued Backend::wait may hold its queue before it fails. Generous by default:
  /// it only turns a wait that nobody will ever signal into an error instead of a hang.
  std::chrono::nanoseconds wait_timeout = std::chrono::minutes(5);
};

/// A compute device. Devices outlive the backends, buffers and events made from them.
class Device {
 public:
  virtual ~Device() = default;
  /// Short unique name ("cpu", "part:1").
  virtual std::string_view name() const = 0;
  virtual DeviceKind kind() const = 0;
  virtual DeviceMemory memory() const = 0;
  virtual DeviceCaps caps() const = 0;
  /// The buffer type for weights and activations on this device.
  virtual memory::BufferType& buffer_type() = 0;
  /// Whether a backend of this device can compute `node` (op and types).
  virtual bool supports_op(const core::Tensor& node) const = 0;
  virtual Result<std::unique_ptr<Backend>> make_backend(const BackendOptions& options) = 0;
  /// A group that all-reduces over `members` (this device among them), for devices whose
  /// queues can meet without sharing memory (MPI ranks). kUnsupported by default.
  virtual Result<std::unique_ptr<Collective>> make_collective(const std::vector<Device*>& members);
  /// A new event at value 0 on this device. Optional: the default, for devices without
  /// caps().events, is kUnsupported.
  virtual Result<std::unique_ptr<Event>> make_event();
};

}  // namespace strata::backend
