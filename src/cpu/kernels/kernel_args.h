// What every CPU kernel receives besides its node: which thread it is, scratch, a barrier.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace strata::cpu {

struct WorkShare;  // work_shares.h

/// Per-thread view of one kernel invocation. Every participant calls the kernel with the same
/// node, scratch and barrier; ith tells it which share of the work is its own.
struct KernelArgs {
  int ith = 0;  ///< this participant, 0 <= ith < nth
  int nth = 1;  ///< participants running the kernel together
  /// Scratch shared by all participants, at least work_size(node, nth) bytes.
  uint8_t* scratch = nullptr;
  size_t scratch_size = 0;
  /// Blocks until all nth participants have called it; null when nth == 1.
  void (*barrier_fn)(void* ctx) = nullptr;
  void* barrier_ctx = nullptr;
  /// nth shares of a node's items that idle participants take from (work_shares.h); null
  /// where the caller has none, and kernels then keep to their split_range.
  WorkShare* shares = nullptr;
  /// mul_mat: the shared scratch already holds src1 converted for this node, by the node run
  /// just before it (see shares_converted_input in dispatch.h), every participant past that
  /// node's conversion; and `shares` are empty, so they need no barrier after publication.
  bool input_ready = false;

  void barrier() const {
    if (nth > 1) barrier_fn(barrier_ctx);
  }
};

/// Half-open range of work items.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};

/// The share of n items that participant ith of nth owns: contiguous, sizes differ by <= 1.
inline Range split_range(int64_t n, int ith, int nth) {
  const int64_t per = n / nth;
  const int64_t extra = n % nth;
  const int64_t begin = ith * per + std::min<int64_t>(ith, extra);
  return {begin, begin + per + (ith < extra ? 1 : 0)};
}

/// Dims 1..3 of a flat row index r (r = i1 + ne1 * (i2 + ne2 * i3)).
struct RowIndex {
  int64_t i1, i2, i3;
};
inline RowIndex row_index(const core::Tensor& t, int64_t r) {
  return {r % t.ne[1], (r / t.ne[1]) % t.ne[2], r / (t.ne[1] * t.ne[2])};
}

/// Scratch offsets are rounded to cache lines so per-thread areas never share one.
inline constexpr size_t kScratchAlign = 64;
inline size_t align_up(size_t n) {
  return (n + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

/// The first cache-line-aligned address of the scratch; work_size adds kScratchAlign of slack.
inline uint8_t* aligned_scratch(const KernelArgs& args) {
  if (args.scratch == nullptr) return nullptr;
  const auto p = reinterpret_cast<uintptr_t>(args.scratch);
  return args.scratch + (align_up(p) - p);
}

/// Participant ith's own area (null when there is no scratch) when each of nth gets `per_thread`
/// bytes after `shared` bytes.
inline uint8_t* thread_scratch(const KernelArgs& args, size_t shared, size_t per_thread) {
  if (args.scratch == nullptr) return nullptr;
  return aligned_scratch(args) + align_up(shared) +
         static_cast<size_t>(args.ith) * align_up(per_thread);
}

/// Scratch bytes needed for `shared` bytes plus `per_thread` bytes for each of nth participants.
inline size_t scratch_bytes(size_t shared, size_t per_thread, int nth) {
  if (shared == 0 && per_thread == 0) return 0;
  return kScratchAlign + align_up(shared) + static_cast<size_t>(nth) * align_up(per_thread);
}

}  // namespace strata::cpu
