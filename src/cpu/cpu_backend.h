// The CPU backend: computes graphs synchronously on a persistent thread pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "cpu/thread_pool.h"

namespace strata::cpu {

/// A synchronous queue: each call completes before it returns, so synchronize() only reports.
/// Everything queued before a signal has therefore completed when it is made, and it fires at
/// once; a wait blocks the caller until another thread or queue signals, and fails after
/// `wait_timeout` (a wait on an event only this queue could signal would otherwise never end).
class CpuBackend final : public backend::Backend {
 public:
  CpuBackend(backend::Device& device, int n_threads,
             std::chrono::nanoseconds wait_timeout = std::chrono::minutes(5));

  backend::Device& device() override { return *device_; }
  Status compute_async(const core::Graph& graph) override;
  Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) override;
  Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) override;
  Status copy_async(core::Tensor& dst, const core::Tensor& src) override;
  Status signal(backend::Event& event, uint64_t value) override;
  Status wait(backend::Event& event, uint64_t value) override;
  Status synchronize() override { return {}; }

  int n_threads() const { return pool_.size(); }
  /// Whether the thread pool started all its workers (ThreadPool::start_status).
  const Status& start_status() const { return pool_.start_status(); }

 private:
  backend::Device* device_;
  std::chrono::nanoseconds wait_timeout_;
  ThreadPool pool_;
  std::vector<uint8_t> scratch_;
};

}  // namespace strata::cpu
