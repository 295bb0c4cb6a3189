#include "gguf/writer.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "gguf/encoder.h"
#include "gguf/layout.h"
#include "gguf/sink.h"

namespace strata::gguf {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint32_t kVersion = 3;

enum class Stage { kBuilding, kWriting, kFinished, kFailed };

Status invalid(const std::string& message) {
  return error(ErrorCode::kInvalidArgument, "gguf writer: " + message);
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kBuilding:
      return "before begin()";
    case Stage::kWriting:
      return "after begin()";
    case Stage::kFinished:
      return "after finish()";
    case Stage::kFailed:
      return "after a failed write";
  }
  return "in an unknown state";
}

}  // namespace

struct Writer::Impl {
  Stage stage = Stage::kBuilding;
  size_t alignment = kDefaultAlignment;
  std::vector<KeyValue> metadata;
  std::unordered_set<std::string> keys;
  std::vector<TensorInfo> tensors;
  std::unordered_set<std::string> names;

  std::unique_ptr<Sink> sink;
  bool in_memory = false;
  std::vector<uint8_t> memory;
  size_t current = 0;   // index of the tensor being written
  size_t written = 0;   // bytes of the current tensor written so far
  size_t position = 0;  // bytes written into the data section, padding included

  Status order_error(const char* call) const {
    return invalid(std::string(call) + " called " + stage_name(stage));
  }

  // Any failure of the output leaves the file unusable: stop, and let the sink remove it.
  Status write(const void* data, size_t size) {
    Status s = sink->write(data, size);
    if (!s.ok()) {
      stage = Stage::kFailed;
      sink.reset();
    }
    return s;
  }

  Status pad_to_alignment() {
    static constexpr uint8_t kZeros[4096] = {};
    size_t padding = align_up(position, alignment) - position;
    while (padding > 0) {
      const size_t n = std::min(padding, sizeof(kZeros));
      STRATA_RETURN_IF_ERROR(write(kZeros, n));
      padding -= n;
      position += n;
    }
    return Status::ok_status();
  }

  // Moves past the current tensor while it is complete (empty tensors are complete at once).
  Status advance() {
    while (current < tensors.size() && written == tensors[current].size) {
      STRATA_RETURN_IF_ERROR(pad_to_alignment());
      ++current;
      written = 0;
    }
    return Status::ok_status();
  }

  Status start(std::unique_ptr<Sink> out) {
    Encoder e;
    e.bytes().assign(kMagic, kMagic + 4);
    e.put(kVersion);
    e.put(static_cast<uint64_t>(tensors.size()));
    e.put(static_cast<uint64_t>(metadata.size()));
    for (const KeyValue& kv : metadata) {
      e.put_string(kv.key);
      e.put(static_cast<uint32_t>(kv.value.type));
      e.put_value(kv.value);
    }
    size_t offset = 0;
    for (TensorInfo& t : tensors) {
      t.offset = offset;
      offset = align_up(offset + t.size, alignment);
      e.put_tensor_info(t);
    }
    const size_t header = e.bytes().size();
    e.bytes().resize(align_up(header, alignment), 0);

    sink = std::move(out);
    stage = Stage::kWriting;
    STRATA_RETURN_IF_ERROR(write(e.bytes().data(), e.bytes().size()));
    return advance();
  }
};

Writer::Writer() : impl_(std::make_unique<Impl>()) {}
Writer::Writer(Writer&&) noexcept = default;
Writer& Writer::operator=(Writer&&) noexcept = default;
Writer::~Writer() = default;

Status Writer::add_metadata(std::string key, Value value) {
  if (impl_->stage != Stage::kBuilding) return impl_->order_error("add_metadata");
  if (key.empty()) return invalid("metadata key is empty");
  if (impl_->keys.count(key) != 0) return invalid("duplicate metadata key '" + key + "'");
  STRATA_RETURN_IF_ERROR(check_value(key, value));
  if (key == kAlignmentKey) {
    const auto* a = std::get_if<uint32_t>(&value.data);
    if (a == nullptr || !is_power_of_two(*a)) {
      return invalid(std::string(kAlignmentKey) + " must be a u32 power of two, not " +
                     std::string(value_type_name(value.type)) + " " + value.to_display_string());
    }
    impl_->alignment = *a;
  }
  impl_->keys.insert(key);
  impl_->metadata.push_back({std::move(key), std::move(value)});
  return Status::ok_status();
}

Status Writer::add_tensor(std::string name, core::Type type, const std::vector<int64_t>& ne) {
  if (impl_->stage != Stage::kBuilding) return impl_->order_error("add_tensor");
  if (name.empty()) return invalid("tensor name is empty");
  if (impl_->names.count(name) != 0) return invalid("duplicate tensor name '" + name + "'");
  if (ne.empty() || ne.size() > static_cast<size_t>(kMaxDims)) {
    return invalid("tensor '" + name + "' has " + std::to_string(ne.size()) + " dimensions (1 to " +
                   std::to_string(kMaxDims) + " are supported)");
  }
  if (!core::type_from_id(static_cast<uint32_t>(type))) {
    return invalid("tensor '" + name + "' has invalid type id " +
                   std::to_string(static_cast<uint32_t>(type)));
  }
  TensorInfo t;
  t.type = type;
  t.n_dims = static_cast<int>(ne.size());
  std::copy(ne.begin(), ne.end(), t.ne);
  auto size = tensor_byte_size(name, type, t.ne, t.n_dims, ErrorCode::kInvalidArgument);
  if (!size.ok()) return size.status();
  t.size = *size;
  t.name = std::move(name);
  impl_->names.insert(t.name);
  impl_->tensors.push_back(std::move(t));
  return Status::ok_status();
}

Status Writer::begin(const std::string& path) {
  if (impl_->stage != Stage::kBuilding) return impl_->order_error("begin");
  auto sink = open_file_sink(path);
  if (!sink.ok()) return sink.status();
  return impl_->start(std::move(*sink));
}

Status Writer::begin_in_memory() {
  if (impl_->stage != Stage::kBuilding) return impl_->order_error("begin_in_memory");
  impl_->in_memory = true;
  return impl_->start(make_memory_sink(&impl_->memory));
}

Status Writer::write_tensor_data(const void* data, size_t size) {
  Impl& w = *impl_;
  if (w.stage != Stage::kWriting) return w.order_error("write_tensor_data");
  if (size == 0) return Status::ok_status();
  if (w.current == w.tensors.size()) {
    return invalid(std::to_string(size) + " bytes of tensor data written after the last tensor");
  }
  const TensorInfo& t = w.tensors[w.current];
  const size_t left = t.size - w.written;
  if (size > left) {
    return invalid("a chunk of " + std::to_string(size) + " bytes runs past the end of tensor '" +
                   t.name + "' (" + std::to_string(left) + " of its " + std::to_string(t.size) +
                   " bytes left)");
  }
  STRATA_RETURN_IF_ERROR(w.write(data, size));
  w.written += size;
  w.position += size;
  return w.advance();
}

Status Writer::finish() {
  Impl& w = *impl_;
  if (w.stage != Stage::kWriting) return w.order_error("finish");
  if (w.current < w.tensors.size()) {
    const TensorInfo& t = w.tensors[w.current];
    return invalid("finish() called with tensor '" + t.name + "' incomplete (" +
                   std::to_string(w.written) + " of " + std::to_string(t.size) +
                   " bytes written, " + std::to_string(w.tensors.size() - w.current - 1) +
                   " tensors after it)");
  }
  Status s = w.sink->close();
  w.sink.reset();
  w.stage = s.ok() ? Stage::kFinished : Stage::kFailed;
  return s;
}

Result<std::vector<uint8_t>> Writer::take_bytes() {
  if (!impl_->in_memory) return invalid("take_bytes() needs begin_in_memory()");
  if (impl_->stage != Stage::kFinished) return impl_->order_error("take_bytes");
  return std::move(impl_->memory);
}

const std::vector<TensorInfo>& Writer::tensors() const {
  return impl_->tensors;
}

size_t Writer::alignment() const {
  return impl_->alignment;
}

}  // namespace strata::gguf
