#include "engine/kv_home.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "memory/buffer.h"

namespace strata::engine {
namespace {

class MemoryHome final : public KvHome {
 public:
  explicit MemoryHome(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  Status read(size_t offset, void* dst, size_t n) override {
    STRATA_RETURN_IF_ERROR(check(offset, n));
    std::memcpy(dst, bytes_.data() + offset, n);
    return {};
  }
  Status write(size_t offset, const void* src, size_t n) override {
    STRATA_RETURN_IF_ERROR(check(offset, n));
    std::memcpy(bytes_.data() + offset, src, n);
    return {};
  }
  std::string describe() const override {
    return "host memory (" + memory::format_bytes(bytes_.size()) + ")";
  }

 private:
  Status check(size_t offset, size_t n) const {
    if (offset > bytes_.size() || n > bytes_.size() - offset)
      return error(ErrorCode::kInternal, "kv home: access outside the cache");
    return {};
  }
  std::vector<uint8_t> bytes_;
};

class FileHome final : public KvHome {
 public:
  FileHome(std::string path, int fd, size_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~FileHome() override {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  Status read(size_t offset, void* dst, size_t n) override {
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return failure("read", got < 0 ? errno : EIO);
      p += got;
      offset += static_cast<size_t>(got);
      n -= static_cast<size_t>(got);
    }
    return {};
  }
  Status write(size_t offset, const void* src, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(src);
    while (n > 0) {
      const ssize_t put = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) return failure("write", put < 0 ? errno : ENOSPC);
      p += put;
      offset += static_cast<size_t>(put);
      n -= static_cast<size_t>(put);
    }
    return {};
  }
  std::string describe() const override {
    return "file " + path_ + " (" + memory::format_bytes(size_) + ")";
  }

 private:
  Status failure(const char* what, int err) const {
    return error(ErrorCode::kIo,
                 "kv home " + path_ + ": cannot " + what + ": " + std::strerror(err));
  }
  std::string path_;
  int fd_;
  size_t size_;
};

}  // namespace

Result<std::unique_ptr<KvHome>> KvHome::in_memory(size_t bytes) {
  std::vector<uint8_t> v;
  try {
    v.assign(bytes, 0);
  } catch (const std::bad_alloc&) {
    return error(ErrorCode::kOutOfMemory,
                 "kv home: cannot allocate " + memory::format_bytes(bytes) + " of host memory");
  }
  return std::unique_ptr<KvHome>(new MemoryHome(std::move(v)));
}

Result<std::unique_ptr<KvHome>> KvHome::in_file(const std::string& path, size_t bytes) {
  const std::string what = "kv home " + path + ": ";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return error(ErrorCode::kIo, what + "not a regular file");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return error(ErrorCode::kIo, what + "cannot create: " + std::strerror(errno));
  // Reserve every block now: a full disk fails here, with nothing half-written.
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    return error(ErrorCode::kIo, what + "cannot reserve " + memory::format_bytes(bytes) + ": " +
                                     std::strerror(err));
  }
  return std::unique_ptr<KvHome>(new FileHome(path, fd, bytes));
}

}  // namespace strata::engine
