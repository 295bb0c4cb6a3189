#include "gguf/sink.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

namespace strata::gguf {
namespace {

// Large writes of multi-GB models go through stdio with a buffer big enough that the
// per-call overhead of small header fields and chunks does not matter.
constexpr size_t kFileBufferSize = size_t{1} << 20;

class FileSink final : public Sink {
 public:
  FileSink(std::string path, std::FILE* f) : path_(std::move(path)), file_(f) {
    std::setvbuf(file_, nullptr, _IOFBF, kFileBufferSize);
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() override {
    if (file_ != nullptr) {
      std::fclose(file_);
      std::remove(path_.c_str());
    }
  }

  Status write(const void* data, size_t size) override {
    if (file_ == nullptr) return closed();
    if (std::fwrite(data, 1, size, file_) != size) return io_error(errno);
    return Status::ok_status();
  }

  Status close() override {
    if (file_ == nullptr) return closed();
    // Buffered bytes reach the OS only here, so a full disk often shows up here first.
    int err = 0;
    if (std::fflush(file_) != 0) err = errno;
    if (std::fclose(file_) != 0 && err == 0) err = errno;
    file_ = nullptr;
    if (err != 0) {
      std::remove(path_.c_str());
      return io_error(err);
    }
    return Status::ok_status();
  }

 private:
  Status io_error(int err) const {
    return error(ErrorCode::kIo, "cannot write '" + path_ + "': " + std::strerror(err));
  }
  Status closed() const {
    return error(ErrorCode::kInternal, "gguf: write to '" + path_ + "' after it was closed");
  }

  std::string path_;
  std::FILE* file_;
};

class MemorySink final : public Sink {
 public:
  explicit MemorySink(std::vector<uint8_t>* out) : out_(out) {}

  Status write(const void* data, size_t size) override {
    const auto* p = static_cast<const uint8_t*>(data);
    out_->insert(out_->end(), p, p + size);
    return Status::ok_status();
  }
  Status close() override { return Status::ok_status(); }

 private:
  std::vector<uint8_t>* out_;
};

}  // namespace

Result<std::unique_ptr<Sink>> open_file_sink(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return error(ErrorCode::kIo, "cannot create '" + path + "': " + std::strerror(errno));
  }
  return std::unique_ptr<Sink>(std::make_unique<FileSink>(path, f));
}

std::unique_ptr<Sink> make_memory_sink(std::vector<uint8_t>* out) {
  return std::make_unique<MemorySink>(out);
}

}  // namespace strata::gguf
