// Runs one graph across several backends: assigns nodes, cuts splits, copies split inputs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "core/context.h"
#include "core/graph.h"
#include "core/status.h"
#include "memory/graph_allocator.h"

namespace strata::sched {

struct Plan;

/// A run of consecutive nodes on one backend and the inputs it needs copied from elsewhere.
struct Split {
  struct Input {
    const core::Tensor* storage = nullptr;  ///< the tensor whose bytes are copied
    size_t offset = 0;                      ///< first byte of the copied range in `storage`
    size_t bytes = 0;
    core::Tensor* copy = nullptr;    ///< the copy, on this split's backend
    core::Tensor* source = nullptr;  ///< the copied bytes as a tensor shaped like `copy`
  };
  int backend = 0;
  std::vector<core::Tensor*> nodes;  ///< compute nodes only; views are never executed
  std::vector<Input> inputs;
};

/// Called for every node before the run with ask = true (return true to observe it), then
/// after the node has been computed with ask = false and its data readable on the host
/// (return false to stop the run).
using EvalCallback = std::function<bool(const core::Tensor& node, bool ask)>;

/// Splits graphs across `backends` (priority order; the last must be the host CPU, which can
/// run every op and address host memory). Weights pin the ops that read them to the weights'
/// backend; other ops follow their neighbours; ops a backend cannot run fall back to the next.
/// A view is never a split boundary and never copied: the bytes it spans are copied and the
/// view is re-pointed at the copy.
///
/// Runs are asynchronous: every split is queued on its backend and fenced with timeline events
/// (a consumer's queue waits for the producer's signal before copying; a producer waits for
/// the consumers' copy-done signals before overwriting memory they read), so the host never
/// synchronizes between splits and consecutive graphs overlap across devices (pipelining).
class Scheduler {
 public:
  explicit Scheduler(std::vector<backend::Backend*> backends);
  ~Scheduler();

  /// Sizes each backend's compute buffer for `graph` (the largest graph to come).
  Status reserve(const core::Graph& graph);
  /// Assigns, splits and places `graph`; afterwards inputs can be written through backend_of()
  /// and every node's data is readable after the run. The caller's graph is never modified
  /// beyond the placement of its tensors: the scheduler runs its own copy. Plans are cached
  /// per graph shape (see GraphSignature), so a graph built again with the same shape is not
  /// planned again.
  Status allocate(const core::Graph& graph);
  /// Runs the graph last allocated, copying split inputs, and waits for it to finish.
  Status compute();
  /// Queues the graph last allocated and returns; the caller keeps any host memory it queued
  /// transfers with alive until synchronize().
  Status compute_async();
  /// Waits for everything queued on every backend; returns the first error.
  Status synchronize();

  /// The backend that holds a placed tensor (graph inputs included), for writing and reading.
  backend::Backend& backend_of(const core::Tensor& t);
  /// The splits of the graph last allocated (its nodes are the scheduler's copies).
  const std::vector<Split>& splits() const;
  /// Bytes copied between backends by the last compute().
  size_t bytes_copied() const { return bytes_copied_; }
  /// One line per split: backend, node range, copied inputs.
  std::string describe() const;
  void set_eval_callback(EvalCallback cb) { eval_ = std::move(cb); }
  size_t compute_buffer_bytes() const;
  /// Graphs planned from scratch and graphs that reused a cached plan, since construction.
  uint64_t plans_built() const { return plans_built_; }
  uint64_t plans_reused() const { return plans_reused_; }

 private:
  int location(const Plan* p, const core::Tensor& t) const;
  std::vector<const void*> compute_buffers() const;
  Status plan(Plan& p);
  Status place(Plan& p, bool reserve_only);
  Status copy_inputs(const Split& split);
  Status run_split(const Split& split);
  Status signal(int b);
  Status wait_for(int consumer, int producer);
  Status wait_for_readers(int b);
  void retire(std::unique_ptr<Plan> p);

  std::vector<backend::Backend*> backends_;
  std::vector<std::unique_ptr<memory::GraphAllocator>> allocators_;
  std::vector<std::unique_ptr<Plan>> cache_;    // most recently used plans, at most kCacheSize
  std::vector<std::unique_ptr<Plan>> retired_;  // evicted plans queued work may use, until sync
  Plan* current_ = nullptr;                     // the plan last allocated
  // The caller's inputs and outputs of the graph last allocated, to their copies.
  std::unordered_map<const core::Tensor*, const core::Tensor*> aliases_;
  EvalCallback eval_;
  // Timeline per backend (null when its device has no events: it then synchronizes instead),
  // the value its last queued signal reaches, and per backend the values other backends'
  // events reach once their queued copies of its memory are done.
  std::vector<std::unique_ptr<backend::Event>> events_;
  std::vector<uint64_t> issued_;
  std::vector<std::vector<uint64_t>> pending_reads_;
  size_t bytes_copied_ = 0;
  uint64_t plans_built_ = 0;
  uint64_t plans_reused_ = 0;
  uint64_t use_clock_ = 0;
  bool debug_ = false;
};

}  // namespace strata::sched
