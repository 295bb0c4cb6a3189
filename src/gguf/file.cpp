#include "gguf/file.h"

#include <algorithm>
#include <map>
#include <utility>

#include "gguf/mapping.h"
#include "gguf/parser.h"

namespace strata::gguf {

struct File::Impl {
  Mapping mapping;  // empty for from_memory
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string path;
  ParsedFile parsed;
  std::map<std::string, size_t, std::less<>> key_index;
  std::map<std::string, size_t, std::less<>> tensor_index;
};

namespace {

Status key_not_found(std::string_view key) {
  return error(ErrorCode::kNotFound, "gguf: key '" + std::string(key) + "' not found");
}

Status wrong_type(std::string_view key, const Value& v, std::string_view wanted) {
  return error(ErrorCode::kInvalidArgument, "gguf: key '" + std::string(key) + "' is a " +
                                                std::string(value_type_name(v.type)) + ", not " +
                                                std::string(wanted));
}

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    case ValueType::kFloat32:
    case ValueType::kBool:
    case ValueType::kString:
    case ValueType::kArray:
    case ValueType::kFloat64:
      return false;
  }
  return false;
}

}  // namespace

Result<File> File::build(std::unique_ptr<Impl> impl) {
  auto parsed = parse_gguf(impl->data, impl->size);
  if (!parsed.ok()) return parsed.status();
  impl->parsed = std::move(*parsed);
  // The parser has already rejected duplicate keys and names.
  for (size_t i = 0; i < impl->parsed.metadata.size(); ++i) {
    impl->key_index.emplace(impl->parsed.metadata[i].key, i);
  }
  for (size_t i = 0; i < impl->parsed.tensors.size(); ++i) {
    impl->tensor_index.emplace(impl->parsed.tensors[i].name, i);
  }
  return File(std::move(impl));
}

Result<File> File::open(const std::string& path) {
  auto mapping = Mapping::map_file(path);
  if (!mapping.ok()) return mapping.status();
  auto impl = std::make_unique<Impl>();
  impl->mapping = std::move(*mapping);
  impl->data = impl->mapping.data();
  impl->size = impl->mapping.size();
  impl->path = path;
  return build(std::move(impl));
}

Result<File> File::from_memory(const void* data, size_t size) {
  auto impl = std::make_unique<Impl>();
  impl->data = static_cast<const uint8_t*>(data);
  impl->size = data == nullptr ? 0 : size;
  return build(std::move(impl));
}

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

uint32_t File::version() const {
  return impl_->parsed.version;
}
size_t File::alignment() const {
  return impl_->parsed.alignment;
}
const std::string& File::path() const {
  return impl_->path;
}
const std::vector<KeyValue>& File::metadata() const {
  return impl_->parsed.metadata;
}

const Value* File::find(std::string_view key) const {
  const auto it = impl_->key_index.find(key);
  return it == impl_->key_index.end() ? nullptr : &impl_->parsed.metadata[it->second].value;
}

Result<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_not_found(key);
  const std::string* s = v->as_string();
  if (s == nullptr) return wrong_type(key, *v, "a string");
  return *s;
}

Result<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_not_found(key);
  if (!is_integer(v->type)) {
    return wrong_type(key, *v, "an integer");
  }
  const auto i = v->as_int();
  if (!i) {
    return error(ErrorCode::kInvalidArgument, "gguf: key '" + std::string(key) + "' value " +
                                                  v->to_display_string() +
                                                  " is not an integer that fits int64");
  }
  return *i;
}

Result<float> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_not_found(key);
  const auto d = v->as_double();
  if (!d) return wrong_type(key, *v, "a number");
  return static_cast<float>(*d);
}

Result<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_not_found(key);
  const bool* b = std::get_if<bool>(&v->data);
  if (b == nullptr) return wrong_type(key, *v, "a bool");
  return *b;
}

Result<const Array*> File::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_not_found(key);
  const Array* a = v->as_array();
  if (a == nullptr) return wrong_type(key, *v, "an array");
  return a;
}

const std::vector<TensorInfo>& File::tensors() const {
  return impl_->parsed.tensors;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  const auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->parsed.tensors[it->second];
}

const void* File::tensor_data(const TensorInfo& info) const {
  return data_section() + info.offset;
}

// A file without tensor data may end before the aligned start of its data section; the
// section is then empty and starts at the end of the file.
const uint8_t* File::data_section() const {
  return impl_->data + std::min(impl_->parsed.data_offset, impl_->size);
}

size_t File::data_section_offset() const {
  return std::min(impl_->parsed.data_offset, impl_->size);
}

size_t File::data_section_size() const {
  return impl_->size - std::min(impl_->parsed.data_offset, impl_->size);
}

size_t File::file_size() const {
  return impl_->size;
}

}  // namespace strata::gguf
