// A CPU partition: a set of cores acting as a discrete device.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "backend/device.h"
#include "cpu/thread_pool.h"
#include "devices/budget_buffer_type.h"
#include "devices/partition_plan.h"

namespace strata::devices {

/// Cores of its own (a NUMA node, on a machine with several), memory of its own under a
/// budget (allocations beyond it fail), a worker team of one thread per core (pinned to its
/// core when the OS allows), asynchronous in-order backends (PartitionBackend) and events.
/// Named "part:N"; kind kPartition; caps async, events, host_buffers.
///
/// The worker team is started by the first make_backend and shared by all the device's
/// backends (their graphs take turns on it). Backends, buffers and events must be destroyed
/// before the device.
class PartitionDevice final : public backend::Device {
 public:
  explicit PartitionDevice(PartitionSpec spec);
  ~PartitionDevice() override;

  std::string_view name() const override { return name_; }
  backend::DeviceKind kind() const override { return backend::DeviceKind::kPartition; }
  /// With a budget: the budget and what is left of it; without: its node's (or the host's).
  backend::DeviceMemory memory() const override;
  backend::DeviceCaps caps() const override { return {true, true, true}; }
  memory::BufferType& buffer_type() override { return buffer_type_; }
  bool supports_op(const core::Tensor& node) const override;
  /// A new queue; BackendOptions::n_threads is ignored (the team has one thread per core).
  Result<std::unique_ptr<backend::Backend>> make_backend(
      const backend::BackendOptions& options) override;
  Result<std::unique_ptr<backend::Event>> make_event() override;

  const PartitionSpec& spec() const { return spec_; }
  /// Bytes held by the device's live buffers.
  size_t memory_in_use() const { return buffer_type_.in_use(); }

 private:
  /// The worker team, started on first use.
  Result<cpu::ThreadPool*> team();

  PartitionSpec spec_;
  std::string name_;
  BudgetBufferType buffer_type_;
  std::mutex team_mutex_;
  std::unique_ptr<cpu::ThreadPool> team_;
};

}  // namespace strata::devices
