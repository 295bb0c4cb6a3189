#include "cpu/graph_compute.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <new>
#include <span>
#include <string>

#include "cpu/kernels/dispatch.h"
#include "cpu/kernels/work_shares.h"
#include "cpu/op_profile.h"
#include "cpu/passes.h"
#include "cpu/weight_prefetch.h"

namespace strata::cpu {
namespace {

using core::Tensor;

bool computes(const Tensor& t) {
  return t.op != core::Op::kNone && !core::is_view_op(t.op);
}

std::string label(const Tensor& t) {
  return "node '" + t.name + "' (" + std::string(core::op_name(t.op)) + ")";
}

Status check_placed(const Tensor& node) {
  if (node.data == nullptr) return error(ErrorCode::kInternal, label(node) + " is not placed");
  for (const Tensor* s : node.src) {
    if (s != nullptr && s->data == nullptr) {
      return error(ErrorCode::kInternal,
                   "source '" + s->name + "' of " + label(node) + " is not placed");
    }
  }
  return {};
}

void pool_barrier(void* pool) {
  static_cast<ThreadPool*>(pool)->barrier();
}

// Lowers `a` to `v` if v is smaller.
void store_min(std::atomic<size_t>& a, size_t v) {
  size_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// STRATA_CPU_PASSES=0 puts a barrier after every node (for measuring what passes save).
bool passes_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("STRATA_CPU_PASSES");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

std::vector<Pass> one_node_passes(size_t n) {
  std::vector<Pass> passes(n);
  for (size_t i = 0; i < n; ++i) passes[i] = {i, i + 1};
  return passes;
}

}  // namespace

Status compute_graph(const core::Graph& g, ThreadPool& pool, std::vector<uint8_t>& scratch,
                     Barriers barriers) {
  std::vector<const Tensor*> work;
  size_t need = 0;
  for (const Tensor* node : g.nodes) {
    if (!computes(*node)) continue;
    // The label is only built for a message: this runs for every node of every graph.
    if (Status st = check_node(*node); !st.ok()) return st.with_context(label(*node));
    STRATA_RETURN_IF_ERROR(check_placed(*node));
    need = std::max(need, work_size(*node, pool.size()));
    work.push_back(node);
  }
  if (work.empty()) return {};
  if (scratch.size() < need) {
    // Grows on a hot path, so the one allocation that can fail there is turned into an error
    // value here; the old scratch stays as it was.
    try {
      scratch.resize(need);
    } catch (const std::bad_alloc&) {
      return error(ErrorCode::kOutOfMemory, "cpu: cannot allocate " + std::to_string(need) +
                                                " bytes of kernel scratch space");
    }
  }

  // A node that fails on any thread stops every thread after that node's barrier. Failures
  // at node i are recorded before barrier i and read after it, so all threads agree on where
  // to stop (a failure at a later node cannot be seen early: it is only compared against i).
  constexpr size_t kNoFailure = std::numeric_limits<size_t>::max();
  std::atomic<size_t> failed_at{kNoFailure};
  std::vector<Status> errors(static_cast<size_t>(pool.size()));
  OpProfile* profile = active_op_profile();
  const std::vector<Pass> passes = barriers == Barriers::kPerPass && passes_enabled()
                                       ? plan_passes(work)
                                       : one_node_passes(work.size());
  const auto members = [&](const Pass& p) {
    return std::span<const Tensor* const>(work).subspan(p.begin, p.end - p.begin);
  };
  // For each pass, the first later one whose weights a thread waiting after it asks for.
  std::vector<size_t> prefetch_target(passes.size(), passes.size());
  for (size_t pi = passes.size(); pi-- > 1;) {
    prefetch_target[pi - 1] =
        WeightPrefetch::has_target(members(passes[pi])) ? pi : prefetch_target[pi];
  }
  // Each product of a pass deals its chunks through shares of its own (work_shares.h).
  const auto nth = static_cast<size_t>(pool.size());
  std::vector<WorkShare> shares(kMaxPassProducts * nth);
  pool.run([&](int ith, int nth_run) {
    KernelArgs args{ith,          nth_run, scratch.data(), scratch.size(),
                    pool_barrier, &pool,   shares.data()};
    // Only the first thread times the nodes: barrier to barrier is every thread's time on one
    // (within a pass, the first thread's own time on each).
    OpProfile* timing = ith == 0 ? profile : nullptr;
    WeightPrefetch prefetch;
    size_t prefetching = passes.size();  // the pass whose weights `prefetch` asks for
    auto since = std::chrono::steady_clock::now();
    const auto lap = [&](const Tensor& node) {
      const auto now = std::chrono::steady_clock::now();
      timing->add(node, std::chrono::duration<double>(now - since).count());
      since = now;
    };
    for (size_t pi = 0; pi < passes.size(); ++pi) {
      const Pass& pass = passes[pi];
      for (size_t i = pass.begin; i < pass.end; ++i) {
        const size_t member = i - pass.begin;
        args.input_ready = member > 0 && work[i]->op == core::Op::kMulMat;
        args.shares = shares.data() + (args.input_ready ? member * nth : 0);
        Status s = compute_node(*work[i], args);
        if (!s.ok()) {
          errors[static_cast<size_t>(ith)] = s.with_context(label(*work[i]));
          store_min(failed_at, i);
        }
        if (timing != nullptr && i + 1 < pass.end) lap(*work[i]);
      }
      const size_t last = pass.end - 1;
      if (pi + 1 == passes.size()) {
        if (timing != nullptr) lap(*work[last]);
        break;
      }
      if (const size_t t = prefetch_target[pi]; t != prefetching) {
        prefetch =
            t < passes.size() ? WeightPrefetch(members(passes[t]), ith, nth_run) : WeightPrefetch();
        prefetching = t;
      }
      pool.barrier(prefetch.idle());
      if (timing != nullptr) lap(*work[last]);
      if (failed_at.load(std::memory_order_relaxed) <= last) break;
    }
  });
  if (failed_at.load(std::memory_order_relaxed) == kNoFailure) return {};
  for (const Status& s : errors) {
    if (!s.ok()) return s;
  }
  return error(ErrorCode::kInternal, "cpu: a node failed without an error");
}

}  // namespace strata::cpu
