// Reading GGUF files (versions 2 and 3): mmap, then validate everything before anything is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "gguf/value.h"

namespace strata::gguf {

/// One tensor's entry in the file's tensor table.
struct TensorInfo {
  std::string name;
  core::Type type = core::Type::kF32;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  ///< elements per dimension, innermost first; unused dims are 1
  uint64_t offset = 0;           ///< byte offset from the start of the data section
  size_t size = 0;               ///< bytes the tensor occupies
};

/// An opened, fully validated GGUF file. Tensor data stays in the read-only mapping and is
/// valid as long as the File lives. Move-only.
class File {
 public:
  /// Maps and validates `path`. Every structural problem (bad magic or version, counts or
  /// strings past the end, tensors past the end or overlapping, unknown types, element counts
  /// that overflow, misaligned offsets) is returned as an error naming the problem.
  static Result<File> open(const std::string& path);
  /// Same as open, over bytes already in memory (which must outlive the File). For tests.
  static Result<File> from_memory(const void* data, size_t size);

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  uint32_t version() const;
  /// `general.alignment`, or 32 when absent.
  size_t alignment() const;
  const std::string& path() const;

  const std::vector<KeyValue>& metadata() const;
  /// The value under `key`, or nullptr.
  const Value* find(std::string_view key) const;
  /// Typed getters: NotFound when absent, InvalidArgument when the stored type does not
  /// convert (integers of any width convert to one another when the value fits).
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<float> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  /// An array under `key`: NotFound when absent, InvalidArgument when not an array.
  Result<const Array*> get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const;
  /// The tensor named `name`, or nullptr.
  const TensorInfo* find_tensor(std::string_view name) const;
  /// Pointer to a tensor's bytes inside the mapping.
  const void* tensor_data(const TensorInfo& info) const;
  /// The whole data section (for wrapping the mapping in a weight buffer).
  const uint8_t* data_section() const;
  size_t data_section_size() const;
  /// Where the data section starts in the file (tensor offsets count from there).
  size_t data_section_offset() const;
  /// Total file size in bytes.
  size_t file_size() const;

 private:
  struct Impl;
  explicit File(std::unique_ptr<Impl> impl);
  /// Parses the bytes `impl` points at and indexes keys and tensor names.
  static Result<File> build(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::gguf
