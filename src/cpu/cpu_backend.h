// The CPU backend: computes graphs synchronously on a persistent thread pool.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "cpu/thread_pool.h"

namespace strata::cpu {

/// A synchronous queue: each call completes before it returns, so synchronize() only reports.
class CpuBackend final : public backend::Backend {
 public:
  CpuBackend(backend::Device& device, int n_threads);

  backend::Device& device() override { return *device_; }
  Status compute_async(const core::Graph& graph) override;
  Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) override;
  Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) override;
  Status synchronize() override { return {}; }

  int n_threads() const { return pool_.size(); }

 private:
  backend::Device* device_;
  ThreadPool pool_;
  std::vector<uint8_t> scratch_;
};

}  // namespace strata::cpu
