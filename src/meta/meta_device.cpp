#include "meta/meta_device.h"

#include <cmath>

#include "backend/host_event.h"
#include "meta/expansion.h"
#include "meta/meta_backend.h"

namespace strata::meta {

Result<std::unique_ptr<MetaDevice>> MetaDevice::create(std::vector<backend::Device*> members,
                                                       std::vector<float> weights) {
  if (members.size() < 2) {
    return error(ErrorCode::kInvalidArgument, "a tensor split needs at least two devices");
  }
  if (weights.empty()) weights.assign(members.size(), 1.0f);
  if (weights.size() != members.size()) {
    return error(ErrorCode::kInvalidArgument, "-ts gives " + std::to_string(weights.size()) +
                                                  " proportions for " +
                                                  std::to_string(members.size()) + " devices");
  }
  for (float w : weights) {
    if (!(w > 0.0f) || !std::isfinite(w)) {
      return error(ErrorCode::kInvalidArgument,
                   "-ts: with -sm tensor every device needs a positive, finite proportion");
    }
  }
  for (backend::Device* m : members) {
    const backend::DeviceCaps c = m->caps();
    // Members' queues wait on each other, so each must queue work rather than run it in the
    // caller (a synchronous queue would block the caller on a signal not yet queued).
    if (!c.async || !c.events) {
      return error(ErrorCode::kInvalidArgument,
                   std::string(m->name()) +
                       " cannot be part of a tensor split: it needs an asynchronous queue and "
                       "events");
    }
  }
  // The first member moves the meta device's own tensors (host memory) in and out.
  if (!members[0]->caps().host_buffers) {
    return error(ErrorCode::kInvalidArgument,
                 "a tensor split must start with a device whose memory this process addresses, "
                 "not " +
                     std::string(members[0]->name()) + " (list mpi:0 first)");
  }
  std::unique_ptr<MetaDevice> dev(new MetaDevice(std::move(members), std::move(weights)));
  // Members in other processes sum their partials with a collective where they can make one
  // (each then needs no copy of the others'); otherwise through copies between them.
  for (backend::Device* m : dev->members_) {
    if (m->caps().host_buffers) continue;
    auto group = m->make_collective(dev->members_);
    if (group.ok()) dev->collective_ = std::move(group).value();
    break;
  }
  return dev;
}

MetaDevice::MetaDevice(std::vector<backend::Device*> members, std::vector<float> weights)
    : members_(std::move(members)), weights_(std::move(weights)), buffer_type_(*this) {
  name_ = "tensor(";
  for (size_t i = 0; i < members_.size(); ++i) {
    name_ += (i > 0 ? "," : "") + std::string(members_[i]->name());
  }
  name_ += ")";
  compute_bytes_.assign(members_.size(), 0);
}

backend::DeviceMemory MetaDevice::memory() const {
  backend::DeviceMemory total;
  for (backend::Device* m : members_) {
    const backend::DeviceMemory mm = m->memory();
    total.free += mm.free;
    total.total += mm.total;
  }
  return total;
}

bool MetaDevice::supports_op(const core::Tensor& node) const {
  switch (node.op) {
    case core::Op::kArgmax:
    case core::Op::kTopK:
    case core::Op::kSumRows:
      return false;
    default:
      break;
  }
  for (backend::Device* m : members_) {
    if (!m->supports_op(node)) return false;
  }
  return true;
}

Result<std::unique_ptr<backend::Backend>> MetaDevice::make_backend(
    const backend::BackendOptions& options) {
  auto b = MetaBackend::create(*this, options);
  if (!b.ok()) return b.status();
  return std::unique_ptr<backend::Backend>(std::move(b).value());
}

Result<std::unique_ptr<backend::Event>> MetaDevice::make_event() {
  return std::unique_ptr<backend::Event>(new backend::HostEvent(*this));
}

const Sharded* MetaDevice::find(const core::Tensor* t) const {
  std::lock_guard lock(mutex_);
  auto it = sharded_.find(t);
  return it != sharded_.end() ? &it->second : nullptr;
}

void MetaDevice::add(const core::Tensor* t, Sharded s) {
  std::lock_guard lock(mutex_);
  sharded_[t] = std::move(s);
}

void MetaDevice::remove(const core::Tensor* t) {
  std::lock_guard lock(mutex_);
  sharded_.erase(t);
}

void MetaDevice::add_compute_bytes(int member, long long delta) {
  std::lock_guard lock(mutex_);
  compute_bytes_[static_cast<size_t>(member)] += delta;
}

std::vector<MemberBytes> MetaDevice::member_bytes() const {
  std::lock_guard lock(mutex_);
  std::vector<MemberBytes> out(members_.size());
  for (const auto& [t, s] : sharded_) {
    for (size_t d = 0; d < s.shard.size(); ++d) out[d].sharded += s.shard[d]->nbytes();
  }
  for (size_t d = 0; d < out.size(); ++d) {
    out[d].compute = static_cast<size_t>(std::max(0LL, compute_bytes_[d]));
  }
  return out;
}

std::vector<size_t> MetaDevice::shard_bytes(const core::Tensor& t) const {
  std::vector<size_t> out(members_.size(), 0);
  if (const Sharded* s = find(&t)) {
    for (size_t d = 0; d < s->shard.size(); ++d) out[d] = s->shard[d]->nbytes();
  }
  return out;
}

}  // namespace strata::meta
