#include "meta/meta_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "meta/meta_device.h"

namespace strata::meta {
namespace {

bool debug_enabled() {
  const char* v = std::getenv("STRATA_SCHED_DEBUG");
  return v != nullptr && v[0] == '1';
}

std::string describe_split(const core::Tensor& t, const Sharded& s, const MetaDevice& dev) {
  std::string out = "meta: " + t.name + " ";
  if (s.axis < 0) return out + "mirrored";
  out += "split on dim " + std::to_string(s.axis) + ":";
  for (size_t d = 0; d < s.pieces.size(); ++d) {
    out += " " + std::string(dev.members()[d]->name());
    for (const Range& r : s.pieces[d]) {
      out += " [" + std::to_string(r.lo) + "," + std::to_string(r.hi) + ")";
    }
  }
  return out;
}

}  // namespace

std::string_view MetaBufferType::name() const {
  return device_->name();
}

size_t MetaBufferType::free_bytes() const {
  double sum = 0;
  for (float w : device_->weights()) sum += w;
  double tightest = static_cast<double>(SIZE_MAX);
  for (size_t d = 0; d < device_->members().size(); ++d) {
    const size_t free = device_->members()[d]->buffer_type().free_bytes();
    const double share = sum > 0 ? device_->weights()[d] / sum : 0;
    if (free == SIZE_MAX || share <= 0) continue;
    tightest = std::min(tightest, static_cast<double>(free) / share);
  }
  return tightest >= static_cast<double>(SIZE_MAX) ? SIZE_MAX : static_cast<size_t>(tightest);
}

Result<std::unique_ptr<memory::Buffer>> MetaBufferType::allocate(size_t size) {
  const size_t bytes = std::max<size_t>(size, 1);
  // Address space only: pages are committed when first written.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return error(ErrorCode::kOutOfMemory,
                 std::string(name()) + ": cannot reserve " + memory::format_bytes(size));
  }
  try {
    return std::unique_ptr<memory::Buffer>(new MetaBuffer(this, *device_, p, bytes));
  } catch (const std::bad_alloc&) {
    munmap(p, bytes);  // the range is not leaked when its owner cannot be made
    return error(ErrorCode::kOutOfMemory, std::string(name()) + ": out of memory");
  }
}

MetaBuffer::MetaBuffer(MetaBufferType* type, MetaDevice& device, void* base, size_t size)
    : Buffer(type, base, size), device_(&device) {}

MetaBuffer::~MetaBuffer() {
  for (const core::Tensor* t : placed_) device_->remove(t);
  munmap(base(), size());
}

Status MetaBuffer::place_split(core::Tensor& t, size_t offset, const memory::TensorSplit& split) {
  STRATA_RETURN_IF_ERROR(place(t, offset));
  const int n = device_->size();
  Sharded s;
  s.axis = split.axis;
  std::string why_mirrored;
  if (split.axis >= 0) {
    const int64_t length = t.ne[static_cast<size_t>(split.axis)];
    auto units = split_units(length, split);
    if (!units.ok()) {
      why_mirrored = units.status().message();
    } else if (*units < n) {
      // Fewer heads (or FFN blocks) than devices: every device holds it whole and computes
      // its part of the layer whole, rather than leave a device idle.
      why_mirrored = std::to_string(*units) + " units for " + std::to_string(n) + " devices";
    } else {
      // Enough units for an even split: a device left without any is the proportions' fault.
      auto pieces = shard_pieces(length, split, device_->weights());
      if (!pieces.ok()) {
        return error(ErrorCode::kInvalidArgument,
                     "-sm tensor: -ts leaves a device without a part of '" + t.name + "' (" +
                         pieces.status().message() + ")");
      }
      s.pieces = std::move(pieces).value();
      const int64_t block = core::block_size(t.type);
      for (const Pieces& p : s.pieces) {
        for (const Range& r : p) {
          if (split.axis == 0 && (r.lo % block != 0 || r.hi % block != 0)) {
            why_mirrored = "a shard boundary would cut a " + std::string(core::type_name(t.type)) +
                           " block of " + std::to_string(block);
          }
        }
      }
    }
  }
  if (!why_mirrored.empty()) {
    s.axis = -1;
    s.pieces.clear();
  }
  const Sharded* alias = aliased_by(t, s);
  for (int d = 0; d < n; ++d) {
    std::array<int64_t, core::kMaxDims> ne = t.ne;
    if (s.axis >= 0) ne[static_cast<size_t>(s.axis)] = total(s.pieces[static_cast<size_t>(d)]);
    backend::Device* member = device_->members()[static_cast<size_t>(d)];
    core::Tensor* shard =
        shards_.new_tensor(t.type, ne, t.name + "#" + std::string(member->name()));
    shard->flags = t.flags;
    if (alias != nullptr) {
      const core::Tensor& same = *alias->shard[static_cast<size_t>(d)];
      auto* holder = static_cast<memory::Buffer*>(same.buffer);
      STRATA_RETURN_IF_ERROR(
          holder->place(*shard, static_cast<size_t>(static_cast<uint8_t*>(same.data) -
                                                    static_cast<uint8_t*>(holder->base()))));
      s.shard.push_back(shard);
      continue;
    }
    auto buf = member->buffer_type().allocate(shard->nbytes());
    if (!buf.ok()) {
      return error(ErrorCode::kOutOfMemory, std::string(member->name()) + ": no room for its " +
                                                memory::format_bytes(shard->nbytes()) +
                                                " shard of '" + t.name +
                                                "': " + buf.status().message());
    }
    // Not zeroed here: weights are written whole next, and a KV cache is zeroed (zero()).
    STRATA_RETURN_IF_ERROR((*buf)->place(*shard, 0));
    member_buffers_.push_back(std::move(buf).value());
    s.shard.push_back(shard);
  }
  if (debug_enabled()) {
    std::fprintf(stderr, "%s%s\n", describe_split(t, s, *device_).c_str(),
                 why_mirrored.empty() ? "" : (" (" + why_mirrored + ")").c_str());
  }
  // Room first: once registered, the tensor must be in placed_ (whose entries the destructor
  // unregisters), or a later tensor at the same address would find these shards.
  placed_.reserve(placed_.size() + 1);
  device_->add(&t, std::move(s));
  placed_.push_back(&t);
  return {};
}

const Sharded* MetaBuffer::aliased_by(const core::Tensor& t, const Sharded& s) const {
  for (const core::Tensor* u : placed_) {
    if (u->data != t.data || u->type != t.type || u->ne != t.ne) continue;
    const Sharded* us = device_->find(u);
    if (us != nullptr && us->axis == s.axis && us->pieces == s.pieces) return us;
  }
  return nullptr;
}

void MetaBuffer::zero() {
  for (const core::Tensor* t : placed_) {
    if (const Sharded* s = device_->find(t)) {
      for (core::Tensor* shard : s->shard) {
        auto* holder = static_cast<memory::Buffer*>(shard->buffer);
        if (holder->is_host()) {
          std::memset(shard->data, 0, shard->nbytes());
        } else {
          holder->zero();  // another process's memory: the shard has the buffer to itself
        }
      }
    }
  }
}

Status MetaBuffer::write(core::Tensor& t, const void* src, size_t offset, size_t size) {
  const Sharded* s = device_->find(&t);
  if (s == nullptr) return Buffer::write(t, src, offset, size);
  if (offset != 0 || size != t.nbytes()) {
    return error(ErrorCode::kInternal, "'" + t.name + "' is split across devices: write it whole");
  }
  for (size_t d = 0; d < s->shard.size(); ++d) {
    core::Tensor& shard = *s->shard[d];
    auto* holder = static_cast<memory::Buffer*>(shard.buffer);
    if (!holder->is_host()) {
      // Another process's memory: written run by run through its buffer (which reads bytes of
      // a model file from its own copy of the file).
      if (s->axis < 0) {
        STRATA_RETURN_IF_ERROR(holder->write(shard, src, 0, size));
        continue;
      }
      std::vector<memory::Buffer::Run> runs;
      for_each_piece_run(t, shard, s->axis, s->pieces[d], [&](size_t wo, size_t so, size_t len) {
        runs.push_back({wo, so, len});
      });
      STRATA_RETURN_IF_ERROR(holder->write_runs(shard, src, runs));
    } else if (s->axis < 0) {
      std::memcpy(shard.data, src, size);
    } else {
      copy_pieces(t, src, shard, shard.data, s->axis, s->pieces[d], /*to_shard=*/true);
    }
  }
  return {};
}

const Sharded* MetaBuffer::sharded(const core::Tensor& t) const {
  return device_->find(&t);
}

Status MetaBuffer::read(const core::Tensor& t, void* dst, size_t offset, size_t size) const {
  const Sharded* s = device_->find(&t);
  if (s == nullptr) return Buffer::read(t, dst, offset, size);
  if (offset != 0 || size != t.nbytes()) {
    return error(ErrorCode::kInternal, "'" + t.name + "' is split across devices: read it whole");
  }
  for (size_t d = 0; d < s->shard.size(); ++d) {
    const core::Tensor& shard = *s->shard[d];
    const auto* holder = static_cast<const memory::Buffer*>(shard.buffer);
    if (!holder->is_host()) {
      if (s->axis < 0) return holder->read(shard, dst, 0, size);
      Status st;
      for_each_piece_run(t, shard, s->axis, s->pieces[d], [&](size_t wo, size_t so, size_t len) {
        if (st.ok()) st = holder->read(shard, static_cast<uint8_t*>(dst) + wo, so, len);
      });
      STRATA_RETURN_IF_ERROR(st);
    } else if (s->axis < 0) {
      std::memcpy(dst, shard.data, size);
      return {};
    } else {
      copy_pieces(t, dst, shard, shard.data, s->axis, s->pieces[d], /*to_shard=*/false);
    }
  }
  return {};
}

const Sharded* shards_of(const core::Tensor& t) {
  const auto* buffer = static_cast<const memory::Buffer*>(t.buffer);
  const auto* meta = dynamic_cast<const MetaBuffer*>(buffer);
  return meta == nullptr ? nullptr : meta->sharded(t);
}

}  // namespace strata::meta
