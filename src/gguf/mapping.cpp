#include "gguf/mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "memory/file_regions.h"

namespace strata::gguf {
namespace {

Status os_error(const char* what, const std::string& path, int err) {
  const ErrorCode code = err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
  return error(code, std::string(what) + " '" + path + "': " + std::strerror(err));
}

// Closes the descriptor on every path out of map_file; the mapping outlives it.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Result<Mapping> Mapping::map_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before the regular-file
  // check below could refuse it; for a regular file it changes nothing.
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return os_error("cannot open", path, errno);

  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return os_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) {
    return error(ErrorCode::kIo, "cannot open '" + path + "': not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  // mmap rejects a length of zero; an empty file is left for the parser to report.
  if (size == 0) return Mapping();

  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) return os_error("cannot map", path, errno);
  // Devices with a copy of the file of their own read weights there instead of receiving them.
  memory::remember_file_mapping(p, size, path);
  return Mapping(static_cast<const uint8_t*>(p), size);
}

Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  reset();
}

void Mapping::reset() {
  if (data_ != nullptr) {
    memory::forget_file_mapping(data_);
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace strata::gguf
