#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>
#include <utility>

#include "gguf/parser.h"

namespace strata::gguf {
namespace {

Status malformed(const std::string& message) {
  return error(ErrorCode::kMalformed, "gguf: " + message);
}

std::string quoted(const std::string& name) {
  return "'" + name + "'";
}

Status read_entry(Cursor& cursor, uint64_t index, TensorInfo& info) {
  auto name = cursor.read_string("the name of tensor " + std::to_string(index));
  if (!name.ok()) return name.status();
  if (name->empty()) return malformed("tensor " + std::to_string(index) + " has an empty name");
  info.name = std::move(*name);
  const std::string what = "tensor " + quoted(info.name);

  auto n_dims = cursor.read<uint32_t>("the dimension count of " + what);
  if (!n_dims.ok()) return n_dims.status();
  if (*n_dims < 1 || *n_dims > kMaxDims) {
    return malformed(what + " has " + std::to_string(*n_dims) + " dimensions (1 to " +
                     std::to_string(kMaxDims) + " are supported)");
  }
  info.n_dims = static_cast<int>(*n_dims);
  for (int d = 0; d < info.n_dims; ++d) {
    auto ne = cursor.read<uint64_t>("the shape of " + what);
    if (!ne.ok()) return ne.status();
    if (*ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return malformed(what + " dimension " + std::to_string(d) + " is negative (" +
                       std::to_string(static_cast<int64_t>(*ne)) + ")");
    }
    info.ne[d] = static_cast<int64_t>(*ne);
  }

  auto type_id = cursor.read<uint32_t>("the type of " + what);
  if (!type_id.ok()) return type_id.status();
  const auto type = core::type_from_id(*type_id);
  if (!type) return malformed(what + " has unknown type id " + std::to_string(*type_id));
  info.type = *type;

  auto offset = cursor.read<uint64_t>("the data offset of " + what);
  if (!offset.ok()) return offset.status();
  info.offset = *offset;
  return Status::ok_status();
}

std::string extent(size_t offset, size_t size) {
  return "[offset " + std::to_string(offset) + ", size " + std::to_string(size) + "]";
}

}  // namespace

Result<std::vector<TensorInfo>> read_tensor_table(Cursor& cursor, uint64_t count) {
  if (count > cursor.remaining() / kMinTensorEntrySize) {
    return malformed("tensor count " + std::to_string(count) + " cannot fit in the remaining " +
                     std::to_string(cursor.remaining()) + " bytes of the file");
  }
  std::vector<TensorInfo> tensors(static_cast<size_t>(count));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < count; ++i) {
    TensorInfo& info = tensors[static_cast<size_t>(i)];
    STRATA_RETURN_IF_ERROR(read_entry(cursor, i, info));
    if (!names.insert(info.name).second) {
      return malformed("duplicate tensor name " + quoted(info.name));
    }
  }
  return tensors;
}

Status check_tensor_layout(std::vector<TensorInfo>& tensors, size_t alignment, size_t data_offset,
                           size_t file_size) {
  const size_t data_size = file_size > data_offset ? file_size - data_offset : 0;
  for (TensorInfo& t : tensors) {
    auto size = tensor_byte_size(t.name, t.type, t.ne, t.n_dims, ErrorCode::kMalformed);
    if (!size.ok()) return size.status();
    t.size = *size;
    if (t.offset % alignment != 0) {
      return malformed("tensor " + quoted(t.name) + " offset " + std::to_string(t.offset) +
                       " is not a multiple of the alignment " + std::to_string(alignment));
    }
    // Offsets are relative to the data section, but messages give file offsets, which is
    // what a hex dump shows; an offset too large to add is past the end whatever it is.
    if (t.offset > data_size) {
      return malformed("tensor " + quoted(t.name) + " data offset " + std::to_string(t.offset) +
                       " (relative to the data section at " + std::to_string(data_offset) +
                       ") is past the end of the file (" + std::to_string(file_size) + " bytes)");
    }
    if (t.size > data_size - t.offset) {
      return malformed(
          "tensor " + quoted(t.name) + " data " + extent(data_offset + t.offset, t.size) +
          " extends past the end of the file (" + std::to_string(file_size) + " bytes)");
    }
  }

  // Sorted by offset, a tensor overlaps an earlier one exactly when it starts before the
  // furthest end seen so far. Empty tensors occupy nothing and overlap nothing.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  const TensorInfo* furthest = nullptr;
  for (const size_t i : order) {
    const TensorInfo& t = tensors[i];
    if (t.size == 0) continue;
    if (furthest != nullptr && t.offset < furthest->offset + furthest->size) {
      return malformed("tensors " + quoted(furthest->name) + " " +
                       extent(data_offset + furthest->offset, furthest->size) + " and " +
                       quoted(t.name) + " " + extent(data_offset + t.offset, t.size) + " overlap");
    }
    if (furthest == nullptr || t.offset + t.size > furthest->offset + furthest->size) {
      furthest = &t;
    }
  }
  return Status::ok_status();
}

}  // namespace strata::gguf
