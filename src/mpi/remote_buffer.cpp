#include "mpi/remote_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "backend/checks.h"
#include "memory/file_regions.h"
#include "mpi/channel.h"
#include "mpi/transport.h"

namespace strata::mpi {
namespace {

struct Range {
  size_t size;
  int rank;
  uint64_t buffer;
};

struct Ranges {
  std::mutex mutex;
  std::map<uintptr_t, Range> by_base;
};

Ranges& ranges() {
  static Ranges r;
  return r;
}

constexpr size_t kPage = 4096;

}  // namespace

std::optional<RemoteSpot> find_remote(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  Ranges& r = ranges();
  std::lock_guard lock(r.mutex);
  auto it = r.by_base.upper_bound(a);
  if (it == r.by_base.begin()) return std::nullopt;
  --it;
  if (a - it->first >= it->second.size) return std::nullopt;
  return RemoteSpot{it->second.rank, it->second.buffer, a - it->first};
}

size_t RemoteBufferType::free_bytes() const {
  const uint64_t used = in_use_.load();
  return used < free_at_start_ ? free_at_start_ - used : 0;
}

Result<std::unique_ptr<memory::Buffer>> RemoteBufferType::allocate(size_t size) {
  if (budget_ != 0 && in_use_.load() + size > budget_) {
    return error(ErrorCode::kOutOfMemory,
                 name_ + ": cannot allocate " + memory::format_bytes(size) + ": " +
                     memory::format_bytes(in_use_.load()) + " of its budget of " +
                     memory::format_bytes(budget_) + " is in use");
  }
  // Ids are the rank's, whichever of its devices asks.
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id.fetch_add(1);
  Command c;
  c.kind = CommandKind::kAlloc;
  c.v[0] = id;
  c.v[1] = size;
  if (Status st = ask_status(rank_, c); !st.ok()) {
    return error(ErrorCode::kOutOfMemory,
                 name_ + ": cannot allocate " + memory::format_bytes(size) + ": " + st.message());
  }
  // One page more than asked, so a tensor's end never meets the next range's start.
  const size_t reserved = (size / kPage + 2) * kPage;
  void* base =
      ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    Command f;
    f.kind = CommandKind::kFree;
    f.v[0] = id;
    (void)post(rank_, f);
    return error(ErrorCode::kOutOfMemory,
                 name_ + ": no address range for " + memory::format_bytes(size));
  }
  {
    Ranges& r = ranges();
    std::lock_guard lock(r.mutex);
    r.by_base[reinterpret_cast<uintptr_t>(base)] = Range{size, rank_, id};
  }
  in_use_ += size;
  return std::unique_ptr<memory::Buffer>(new RemoteBuffer(*this, base, size, reserved, id));
}

RemoteBuffer::~RemoteBuffer() {
  Command c;
  c.kind = CommandKind::kFree;
  c.v[0] = id_;
  (void)post(type_->rank(), c);
  {
    Ranges& r = ranges();
    std::lock_guard lock(r.mutex);
    r.by_base.erase(reinterpret_cast<uintptr_t>(base()));
  }
  ::munmap(base(), reserved_);
  type_->in_use_ -= size();
}

Result<uint64_t> RemoteBuffer::where(const core::Tensor& t, size_t offset, size_t size) const {
  STRATA_RETURN_IF_ERROR(backend::check_tensor_range(t, offset, size));
  const auto at = reinterpret_cast<uintptr_t>(t.data) - reinterpret_cast<uintptr_t>(base());
  if (reinterpret_cast<uintptr_t>(t.data) < reinterpret_cast<uintptr_t>(base()) ||
      at + offset + size > this->size()) {
    return error(ErrorCode::kInternal,
                 "tensor '" + t.name + "' is not in " + std::string(type_->name()) + "'s buffer");
  }
  return at + offset;
}

// The rank's whole-CPU queue has run everything sent to it before (its kept error, if any).
static Status settled(int rank) {
  Command c;
  c.kind = CommandKind::kSync;
  return ask_status(rank, c);
}

void RemoteBuffer::zero() {
  Command c;
  c.kind = CommandKind::kZero;
  c.v[0] = id_;
  if (post(type_->rank(), c).ok()) (void)settled(type_->rank());
}

Status RemoteBuffer::write(core::Tensor& t, const void* src, size_t offset, size_t size) {
  auto at = where(t, offset, size);
  if (!at.ok()) return at.status();
  if (auto spot = memory::find_file_spot(src); spot && spot->left >= size) {
    // The rank has the file too: it reads the bytes there instead of receiving them.
    Command c;
    c.kind = CommandKind::kLoad;
    c.v[0] = id_;
    c.v[1] = *at;
    c.v[2] = spot->offset;
    c.v[3] = size;
    return ask_status(type_->rank(), c, spot->path.data(), spot->path.size());
  }
  Command c;
  c.kind = CommandKind::kWrite;
  c.v[0] = id_;
  c.v[1] = *at;
  STRATA_RETURN_IF_ERROR(post(type_->rank(), c, src, size));
  return settled(type_->rank());
}

Status RemoteBuffer::write_runs(core::Tensor& t, const void* src, std::span<const Run> runs) {
  size_t from_end = 0;
  for (const Run& r : runs) {
    STRATA_RETURN_IF_ERROR(where(t, r.to, r.size).status());
    from_end = std::max(from_end, r.from + r.size);
  }
  auto spot = memory::find_file_spot(src);
  if (!spot || spot->left < from_end) return Buffer::write_runs(t, src, runs);
  auto at = where(t, 0, 0);
  if (!at.ok()) return at.status();
  std::string payload(runs.size() * 3 * sizeof(uint64_t), '\0');
  auto* fields = reinterpret_cast<uint64_t*>(payload.data());
  for (size_t i = 0; i < runs.size(); ++i) {
    fields[3 * i] = runs[i].from;
    fields[3 * i + 1] = runs[i].to;
    fields[3 * i + 2] = runs[i].size;
  }
  payload += spot->path;
  Command c;
  c.kind = CommandKind::kLoadRuns;
  c.v[0] = id_;
  c.v[1] = *at;
  c.v[2] = spot->offset;
  c.v[3] = runs.size();
  return ask_status(type_->rank(), c, payload.data(), payload.size());
}

Status RemoteBuffer::read(const core::Tensor& t, void* dst, size_t offset, size_t size) const {
  return read_on(0, t, dst, offset, size);
}

Status RemoteBuffer::read_on(int queue, const core::Tensor& t, void* dst, size_t offset,
                             size_t size) const {
  auto at = where(t, offset, size);
  if (!at.ok()) return at.status();
  Command c;
  c.queue = queue;
  c.kind = CommandKind::kRead;
  c.v[0] = id_;
  c.v[1] = *at;
  c.v[2] = size;
  c.reply_tag = next_tag();
  WireStatus w;
  STRATA_RETURN_IF_ERROR(post(type_->rank(), c));
  STRATA_RETURN_IF_ERROR(recv(type_->rank(), c.reply_tag, &w, sizeof w));
  STRATA_RETURN_IF_ERROR(w.to_status());
  return recv(type_->rank(), c.reply_tag, dst, size);
}

}  // namespace strata::mpi
