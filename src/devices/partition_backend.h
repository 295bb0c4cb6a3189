// The backend of a CPU partition device: an asynchronous in-order queue.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "cpu/thread_pool.h"
#include "devices/work_queue.h"

namespace strata::devices {

/// Every call checks its arguments, queues the work and returns; a thread of the backend's
/// own (pinned to the partition's first core when the OS allows) runs the work in order and
/// computes graphs on the device's worker team. Errors raised there are kept, prefixed with
/// the device name, and returned by the next synchronize(); work queued after one is skipped
/// until then, but signals still fire.
///
/// Destroying the backend runs what is still queued, except that a wait not yet satisfied
/// gives up at once (with the work after it), so destruction never hangs on an event nobody
/// will signal. Call synchronize() first to know that everything ran.
class PartitionBackend final : public backend::Backend {
 public:
  /// `team` (the device's) and `device` outlive the backend; `queue_core` is where the queue
  /// thread is pinned, -1 for nowhere.
  PartitionBackend(backend::Device& device, cpu::ThreadPool& team, int queue_core,
                   std::chrono::nanoseconds wait_timeout);

  backend::Device& device() override { return *device_; }
  Status compute_async(const core::Graph& graph) override;
  Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) override;
  Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) override;
  Status copy_async(core::Tensor& dst, const core::Tensor& src) override;
  Status signal(backend::Event& event, uint64_t value) override;
  Status wait(backend::Event& event, uint64_t value) override;
  Status synchronize() override { return queue_.synchronize(); }
  Status all_reduce_async(backend::Collective& group, int member, const core::Tensor& src,
                          core::Tensor& dst) override;

 private:
  void push_copy(void* dst, const void* src, size_t size);

  backend::Device* device_;
  cpu::ThreadPool* team_;
  std::chrono::nanoseconds wait_timeout_;
  std::vector<uint8_t> scratch_;  ///< only touched by the queue thread
  WorkQueue queue_;               ///< last: drained before the members its tasks use go away
};

}  // namespace strata::devices
