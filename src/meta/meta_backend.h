// The backend of a meta device: one graph becomes a sub-graph per member, run on the members'
// own queues and fenced by their events.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/device.h"
#include "memory/graph_allocator.h"

namespace strata::meta {

class MetaDevice;
struct Expansion;
struct Step;

/// compute_async expands a graph once per shape (see expansion.h), places each member's part
/// in that member's own compute buffer (sized for its shards), and queues it on the member's
/// backend; members wait on each other's events only where one reads what another wrote (an
/// all-reduce, a tensor made whole), so the host never waits between the steps.
///
/// Transfers (set/get/copy) run on member 0's queue after it has waited for the others; a
/// signal is raised by member 0 once every member's earlier work is done; a wait holds every
/// member's queue. Together these make the meta backend an in-order queue like any other.
class MetaBackend final : public backend::Backend {
 public:
  static Result<std::unique_ptr<MetaBackend>> create(MetaDevice& device,
                                                     const backend::BackendOptions& options);
  ~MetaBackend() override;

  backend::Device& device() override;
  Status compute_async(const core::Graph& graph) override;
  Status reserve(const core::Graph& graph) override;
  Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) override;
  Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) override;
  Status copy_async(core::Tensor& dst, const core::Tensor& src) override;
  Status signal(backend::Event& event, uint64_t value) override;
  Status wait(backend::Event& event, uint64_t value) override;
  Status synchronize() override;

 private:
  explicit MetaBackend(MetaDevice& device) : device_(&device) {}
  Status place(Expansion& x);
  Status join_first();
  Status barrier();
  // Queues every member's steps of `x`, its signals numbered from `base`; `queued` counts
  // each member's signals queued.
  Status queue_steps(const Expansion& x, const std::vector<uint64_t>& base,
                     std::vector<uint32_t>& queued);
  void report_compute_bytes();
  // A kCopyOut step: the member's tensor copied into the destination's rows.
  static Status copy_out(backend::Backend& b, const Step& s);

  MetaDevice* device_;
  std::vector<std::unique_ptr<backend::Backend>> members_;
  std::vector<std::unique_ptr<backend::Event>> events_;
  std::vector<uint64_t> issued_;  // value of each member's last queued signal
  std::vector<bool> busy_;        // work queued since the others last waited for the member
  std::vector<std::unique_ptr<memory::GraphAllocator>> allocators_;
  std::vector<size_t> reported_;
  std::vector<std::unique_ptr<Expansion>> cache_;
  std::vector<std::unique_ptr<Expansion>> retired_;  // evicted; queued work may use them
  uint64_t clock_ = 0;
  bool debug_ = false;
};

}  // namespace strata::meta
