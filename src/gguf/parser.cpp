#include "gguf/parser.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace strata::gguf {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
// Magic, version, tensor count and metadata count.
constexpr size_t kHeaderSize = 4 + 4 + 8 + 8;

Status malformed(const std::string& message) {
  return error(ErrorCode::kMalformed, "gguf: " + message);
}

Status check_magic(const uint8_t* data) {
  if (std::equal(kMagic, kMagic + 4, data)) return Status::ok_status();
  char found[16];
  std::snprintf(found, sizeof(found), "%02x %02x %02x %02x", data[0], data[1], data[2], data[3]);
  return malformed("bad magic " + std::string(found) +
                   " (expected 47 47 55 46, \"GGUF\"): not a GGUF file");
}

Status check_version(uint32_t version) {
  if (version == 2 || version == 3) return Status::ok_status();
  std::string message = "unsupported GGUF version " + std::to_string(version);
  // A big-endian file has its version bytes swapped; say so rather than print a huge number.
  if (version == (2u << 24) || version == (3u << 24)) {
    message += " (a big-endian file? only little-endian GGUF is supported)";
  } else {
    message += " (versions 2 and 3 are supported)";
  }
  return malformed(message);
}

// `general.alignment` when present: a u32 power of two.
Result<size_t> find_alignment(const std::vector<KeyValue>& metadata) {
  for (const KeyValue& kv : metadata) {
    if (kv.key != kAlignmentKey) continue;
    const auto* v = std::get_if<uint32_t>(&kv.value.data);
    if (v == nullptr) {
      return malformed(std::string(kAlignmentKey) + " must be a u32, not a " +
                       std::string(value_type_name(kv.value.type)));
    }
    if (!is_power_of_two(*v)) {
      return malformed(std::string(kAlignmentKey) + " " + std::to_string(*v) +
                       " is not a power of two");
    }
    return size_t{*v};
  }
  return kDefaultAlignment;
}

}  // namespace

Result<ParsedFile> parse_gguf(const uint8_t* data, size_t size) {
  if (size < sizeof(kMagic)) {
    return malformed("file too small to be a GGUF file (" + std::to_string(size) + " bytes)");
  }
  STRATA_RETURN_IF_ERROR(check_magic(data));
  if (size < kHeaderSize) {
    return malformed("file too small (" + std::to_string(size) + " bytes) for a GGUF header (" +
                     std::to_string(kHeaderSize) + " bytes)");
  }

  Cursor cursor(data, size);
  ParsedFile parsed;
  (void)cursor.read<uint32_t>("the magic");
  parsed.version = *cursor.read<uint32_t>("the version");
  STRATA_RETURN_IF_ERROR(check_version(parsed.version));
  const uint64_t n_tensors = *cursor.read<uint64_t>("the tensor count");
  const uint64_t n_kv = *cursor.read<uint64_t>("the metadata count");
  // Both counts are checked against the whole rest of the file up front, so the message
  // names the count that is wrong rather than whatever runs out first.
  if (n_tensors > cursor.remaining() / kMinTensorEntrySize) {
    return malformed("tensor count " + std::to_string(n_tensors) + " cannot fit in the remaining " +
                     std::to_string(cursor.remaining()) + " bytes of the file");
  }

  auto metadata = read_metadata(cursor, n_kv);
  if (!metadata.ok()) return metadata.status();
  parsed.metadata = std::move(*metadata);
  auto alignment = find_alignment(parsed.metadata);
  if (!alignment.ok()) return alignment.status();
  parsed.alignment = *alignment;

  auto tensors = read_tensor_table(cursor, n_tensors);
  if (!tensors.ok()) return tensors.status();
  parsed.tensors = std::move(*tensors);

  parsed.data_offset = align_up(cursor.offset(), parsed.alignment);
  STRATA_RETURN_IF_ERROR(
      check_tensor_layout(parsed.tensors, parsed.alignment, parsed.data_offset, size));
  return parsed;
}

}  // namespace strata::gguf
