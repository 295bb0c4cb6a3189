// Work items dealt in contiguous shares, one per participant, that a participant done with its
// own takes from the end of another's: the threads of a node finish together even when one
// runs slower (a core busy with something else, a smaller core, a VM's stolen time), while
// each still reads one contiguous stretch of memory from the front of its share.
#pragma once

#include <atomic>
#include <cstdint>

#include "cpu/kernels/kernel_args.h"

namespace strata::cpu {

/// One participant's items not yet taken, [front, back) packed in one word so that the owner
/// (from the front) and a thief (from the back) claim with one compare-and-swap each.
struct alignas(64) WorkShare {
  std::atomic<uint64_t> range{0};
};

namespace work_shares {

inline uint64_t pack(uint32_t front, uint32_t back) {
  return static_cast<uint64_t>(back) << 32 | front;
}
inline uint32_t front(uint64_t v) {
  return static_cast<uint32_t>(v);
}
inline uint32_t back(uint64_t v) {
  return static_cast<uint32_t>(v >> 32);
}

}  // namespace work_shares

/// Whether a node can deal its items this way: every participant calls publish_share, then
/// the barrier, then claim_item until it returns -1.
inline bool has_work_shares(const KernelArgs& args, int64_t items) {
  return args.shares != nullptr && args.nth > 1 && items < (int64_t{1} << 31);
}

/// Sets this participant's share to its split_range of `items`.
inline void publish_share(const KernelArgs& args, int64_t items) {
  const Range r = split_range(items, args.ith, args.nth);
  args.shares[args.ith].range.store(
      work_shares::pack(static_cast<uint32_t>(r.begin), static_cast<uint32_t>(r.end)),
      std::memory_order_relaxed);
}

/// The next item for this participant: the front of its own share, else the back of the share
/// with the most items left; -1 when every share is empty. The barrier after publish_share
/// orders the shares' stores before every claim, and the node's closing barrier every output.
inline int64_t claim_item(const KernelArgs& args) {
  using namespace work_shares;
  std::atomic<uint64_t>& own = args.shares[args.ith].range;
  uint64_t v = own.load(std::memory_order_relaxed);
  while (front(v) < back(v)) {
    if (own.compare_exchange_weak(v, pack(front(v) + 1, back(v)), std::memory_order_relaxed)) {
      return front(v);
    }
  }
  for (;;) {
    int victim = -1;
    uint64_t seen = 0;
    uint32_t most = 0;
    for (int t = 0; t < args.nth; ++t) {
      const uint64_t s = args.shares[t].range.load(std::memory_order_relaxed);
      if (t != args.ith && front(s) < back(s) && back(s) - front(s) > most) {
        victim = t;
        seen = s;
        most = back(s) - front(s);
      }
    }
    if (victim < 0) return -1;
    if (args.shares[victim].range.compare_exchange_strong(seen, pack(front(seen), back(seen) - 1),
                                                          std::memory_order_relaxed)) {
      return back(seen) - 1;
    }
  }
}

}  // namespace strata::cpu
