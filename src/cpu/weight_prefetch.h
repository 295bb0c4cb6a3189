// What a thread does while it waits at a barrier of decode: ask for the weights it reads next.
//
// Decode reads each weight once, at memory speed, and between two passes of products a thread
// mostly waits: on nodes of one row that another thread computes (norms, attention's small
// nodes), on the slowest at a barrier. The memory is idle meanwhile, so a waiting thread asks
// for the first lines of its share of the next products' weights (products deal their chunks
// in shares from ith / nth of the rows on: work_shares.h), which then start from L2 instead
// of from memory. It goes on where it stopped at each barrier until those products run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/tensor.h"
#include "cpu/thread_pool.h"

namespace strata::cpu {

class WeightPrefetch {
 public:
  /// Lines asked for at most, per thread and target (within what L2 holds beside the kernels'
  /// own data); STRATA_CPU_PREFETCH=<KiB> in the environment sets it, 0 turns it off.
  static constexpr size_t kDefaultBudget = 256 << 10;

  /// Whether `pass` holds a product of weights by decode's few activation rows.
  static bool has_target(std::span<const core::Tensor* const> pass);

  /// Nothing to ask for.
  WeightPrefetch() = default;
  /// Participant ith of nth's share of the weights of `pass`'s targets, from the front.
  WeightPrefetch(std::span<const core::Tensor* const> pass, int ith, int nth);

  /// The barrier's idle work (ThreadPool::barrier): a few lines a step until the budget is
  /// asked for. This object must outlive the barrier.
  ThreadPool::IdleWork idle();

 private:
  static constexpr int kMaxRegions = 4;
  static bool step(void* self);

  struct Region {
    const uint8_t* next = nullptr;
    const uint8_t* end = nullptr;
  };
  Region regions_[kMaxRegions] = {};
  int n_ = 0;
  int at_ = 0;
};

}  // namespace strata::cpu
