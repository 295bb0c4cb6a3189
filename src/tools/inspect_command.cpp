#include <cstdio>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "memory/buffer.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace strata::tools {

int inspect_command(const std::vector<std::string>& args) {
  bool help = false;
  int64_t max_items = 8;
  FlagSet flags;
  flags.add_int({"--max-items"}, &max_items, "array elements shown per value (8)");
  flags.add_bool({"-h", "--help"}, &help, "show this help");
  std::vector<std::string> files;
  if (Status st = flags.parse(args, &files); !st.ok()) return report_error("inspect", st);
  if (help) {
    std::printf("usage: strata inspect MODEL.gguf\n%s", flags.usage().c_str());
    return 0;
  }
  if (Status st = check_range("--max-items", max_items, 0, int64_t{1} << 30); !st.ok())
    return report_error("inspect", st);
  if (files.size() != 1) {
    return report_error("inspect", error(ErrorCode::kInvalidArgument, "expected one GGUF file"));
  }
  auto file = gguf::File::open(files[0]);
  if (!file.ok()) return report_error("inspect", file.status());

  std::printf("file: %s\nversion: %u\nalignment: %zu\nsize: %s\n\n", files[0].c_str(),
              file->version(), file->alignment(), memory::format_bytes(file->file_size()).c_str());
  std::printf("metadata (%zu keys):\n", file->metadata().size());
  for (const gguf::KeyValue& kv : file->metadata()) {
    std::string type(gguf::value_type_name(kv.value.type));
    if (const gguf::Array* a = kv.value.as_array()) {
      type += "<" + std::string(gguf::value_type_name(a->element_type)) + ">[" +
              std::to_string(a->items.size()) + "]";
    }
    std::printf("  %-44s %-18s %s\n", kv.key.c_str(), type.c_str(),
                kv.value.to_display_string(static_cast<size_t>(max_items)).c_str());
  }
  std::printf("\ntensors (%zu):\n", file->tensors().size());
  std::printf("  %-36s %-6s %-28s %12s %12s\n", "name", "type", "shape", "offset", "bytes");
  size_t total = 0;
  for (const gguf::TensorInfo& t : file->tensors()) {
    std::string shape = "[";
    for (int i = 0; i < t.n_dims; ++i) shape += (i ? ", " : "") + std::to_string(t.ne[i]);
    shape += "]";
    std::printf("  %-36s %-6s %-28s %12llu %12zu\n", t.name.c_str(),
                std::string(core::type_name(t.type)).c_str(), shape.c_str(),
                static_cast<unsigned long long>(t.offset), t.size);
    total += t.size;
  }
  std::printf("\ntotal tensor data: %s\n", memory::format_bytes(total).c_str());
  return 0;
}

}  // namespace strata::tools
