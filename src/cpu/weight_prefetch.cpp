#include "cpu/weight_prefetch.h"

#include <algorithm>
#include <cstdlib>

namespace strata::cpu {
namespace {

// Activation rows at most for a product to count as decode (mul_mat's kStreamMaxActRows).
constexpr int64_t kDecodeRows = 4;
constexpr int kLinesPerStep = 8;
constexpr size_t kLine = 64;

bool is_target(const core::Tensor& node) {
  return node.op == core::Op::kMulMat && node.src[0]->has_flag(core::kFlagWeight) &&
         node.src[1]->nrows() <= kDecodeRows;
}

size_t budget() {
  static const size_t bytes = [] {
    const char* v = std::getenv("STRATA_CPU_PREFETCH");
    return v == nullptr ? WeightPrefetch::kDefaultBudget : std::strtoul(v, nullptr, 10) << 10;
  }();
  return bytes;
}

}  // namespace

bool WeightPrefetch::has_target(std::span<const core::Tensor* const> pass) {
  return std::any_of(pass.begin(), pass.end(), [](const core::Tensor* n) { return is_target(*n); });
}

WeightPrefetch::WeightPrefetch(std::span<const core::Tensor* const> pass, int ith, int nth) {
  size_t left = budget();
  for (const core::Tensor* node : pass) {
    if (!is_target(*node) || n_ == kMaxRegions || left == 0) continue;
    const core::Tensor& w = *node->src[0];
    const size_t share = w.nbytes() / static_cast<size_t>(nth);
    const size_t take = std::min(left, share);
    if (take == 0) continue;
    const auto* from = static_cast<const uint8_t*>(w.data) + share * static_cast<size_t>(ith);
    regions_[n_++] = {from, from + take};
    left -= take;
  }
}

ThreadPool::IdleWork WeightPrefetch::idle() {
  return {at_ < n_ ? &WeightPrefetch::step : nullptr, this};
}

bool WeightPrefetch::step(void* self) {
  auto* p = static_cast<WeightPrefetch*>(self);
  for (int i = 0; i < kLinesPerStep && p->at_ < p->n_; ++i) {
    Region& r = p->regions_[p->at_];
    __builtin_prefetch(r.next, 0, 2);  // to L2: the kernels' own prefetches take it to L1
    r.next += kLine;
    if (r.next >= r.end) ++p->at_;
  }
  return p->at_ < p->n_;
}

}  // namespace strata::cpu
