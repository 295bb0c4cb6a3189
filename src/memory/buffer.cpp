#include "memory/buffer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace strata::memory {
namespace {

class OwnedHostBuffer final : public Buffer {
 public:
  OwnedHostBuffer(BufferType* type, void* base, size_t size) : Buffer(type, base, size) {}
  ~OwnedHostBuffer() override { std::free(base()); }
};

Status check_range(const core::Tensor& t, size_t offset, size_t size) {
  if (t.data == nullptr)
    return error(ErrorCode::kInternal, "tensor '" + t.name + "' is not placed");
  if (offset > t.nbytes() || size > t.nbytes() - offset) {
    return error(ErrorCode::kInvalidArgument, "access of " + std::to_string(size) + " bytes at " +
                                                  std::to_string(offset) + " is outside tensor '" +
                                                  t.name + "' (" + std::to_string(t.nbytes()) +
                                                  " bytes)");
  }
  return {};
}

}  // namespace

Status Buffer::place(core::Tensor& t, size_t offset) {
  if (t.is_view())
    return error(ErrorCode::kInternal, "cannot place view '" + t.name + "' in a buffer");
  const size_t bytes = t.nbytes();
  if (offset > size_ || bytes > size_ - offset) {
    return error(ErrorCode::kInternal, "tensor '" + t.name + "' (" + std::to_string(bytes) +
                                           " bytes at " + std::to_string(offset) +
                                           ") does not fit its buffer of " + std::to_string(size_));
  }
  t.data = static_cast<uint8_t*>(base_) + offset;
  t.buffer = this;
  return {};
}

Status Buffer::place_split(core::Tensor& t, size_t offset, const TensorSplit& /*split*/) {
  return place(t, offset);
}

void Buffer::zero() {
  std::memset(base_, 0, size_);
}

Status Buffer::write(core::Tensor& t, const void* src, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(check_range(t, offset, size));
  std::memcpy(static_cast<uint8_t*>(t.data) + offset, src, size);
  return {};
}

Status Buffer::write_runs(core::Tensor& t, const void* src, std::span<const Run> runs) {
  for (const Run& r : runs) {
    STRATA_RETURN_IF_ERROR(write(t, static_cast<const uint8_t*>(src) + r.from, r.to, r.size));
  }
  return {};
}

Status Buffer::read(const core::Tensor& t, void* dst, size_t offset, size_t size) const {
  STRATA_RETURN_IF_ERROR(check_range(t, offset, size));
  std::memcpy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
  return {};
}

Result<std::unique_ptr<Buffer>> HostBufferType::allocate(size_t size) {
  const size_t align = 4096;
  // aligned_alloc needs a size that is a multiple of the alignment; guard the round-up.
  if (size > SIZE_MAX - align) {
    return error(ErrorCode::kOutOfMemory, "host: cannot allocate " + format_bytes(size));
  }
  const size_t rounded = (std::max<size_t>(size, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) {
    return error(ErrorCode::kOutOfMemory, "host: allocation of " + format_bytes(size) + " failed");
  }
  try {
    return std::unique_ptr<Buffer>(new OwnedHostBuffer(this, p, rounded));
  } catch (const std::bad_alloc&) {
    std::free(p);  // the bytes are not leaked when their owner cannot be made
    return error(ErrorCode::kOutOfMemory, "host: out of memory");
  }
}

HostBufferType& host_buffer_type() {
  static HostBufferType instance;
  return instance;
}

std::unique_ptr<Buffer> wrap_host_memory(void* base, size_t size) {
  return std::make_unique<Buffer>(nullptr, base, size);
}

Status place_view(core::Tensor& view) {
  const core::Tensor* storage = core::storage_of(&view);
  if (storage->data == nullptr) {
    return error(ErrorCode::kInternal,
                 "view '" + view.name + "' of unplaced tensor '" + storage->name + "'");
  }
  view.data = static_cast<uint8_t*>(storage->data) + view.view_offset;
  view.buffer = storage->buffer;
  return {};
}

std::string format_bytes(size_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (size_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
  } else if (bytes >= (size_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.0f KiB", b / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  }
  return buf;
}

}  // namespace strata::memory
