#include "mpi/file_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace strata::mpi {

Result<FileIdentity> identify_file(const std::string& path, uint64_t head_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return error(ErrorCode::kNotFound, "cannot open '" + path + "': " + std::strerror(errno));
  FileIdentity id;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(ErrorCode::kIo, "'" + path + "' is not a regular file");
  }
  id.size = static_cast<uint64_t>(st.st_size);
  id.hashed = std::min(head_bytes, id.size);
  uint64_t h = 14695981039346656037ull;
  std::vector<unsigned char> chunk(1 << 20);
  for (uint64_t done = 0; done < id.hashed;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), id.hashed - done));
    const ssize_t got = ::pread(fd, chunk.data(), want, static_cast<off_t>(done));
    if (got <= 0) {
      ::close(fd);
      return error(ErrorCode::kIo, "cannot read '" + path + "'");
    }
    for (ssize_t i = 0; i < got; ++i) h = (h ^ chunk[static_cast<size_t>(i)]) * 1099511628211ull;
    done += static_cast<uint64_t>(got);
  }
  ::close(fd);
  id.hash = h;
  return id;
}

}  // namespace strata::mpi
