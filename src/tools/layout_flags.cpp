#include "tools/layout_flags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "devices/byte_size.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "gguf/file.h"
#include "model/arch/hparams.h"
#include "tools/session_checks.h"

namespace strata::tools {
namespace {

Status invalid(const std::string& what) {
  return error(ErrorCode::kInvalidArgument, what);
}

// Most partitions --partitions makes, so the highest index --devices may name is one less.
constexpr int64_t kMaxPartitions = 256;
// Proportions are relative, so a bound this high costs nothing and keeps their sum finite.
constexpr float kMaxProportion = 1e6f;

Result<std::vector<float>> parse_split(const std::string& text) {
  std::vector<float> out;
  if (text.empty()) return out;
  // getline drops a trailing empty item, so "3,1," would pass as "3,1" without this.
  if (text.back() == ',') return invalid("-ts: empty proportion at the end of '" + text + "'");
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const float f = std::strtof(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(f) || f < 0.0f)
      return invalid("-ts: bad proportion '" + item + "' (a number from 0 to 1e6)");
    if (f > kMaxProportion)
      return invalid("-ts: proportion '" + item + "' is above 1e6 (only the ratios count)");
    out.push_back(f);
  }
  float total = 0.0f;
  for (float f : out) total += f;
  if (total <= 0.0f) return invalid("-ts: the proportions '" + text + "' are all zero");
  return out;
}

// "--kv-resident 25%" (a share of each device's layers) or "--kv-resident 256M" (bytes).
Result<engine::KvPagingConfig> parse_kv_paging(const LayoutOptions& o) {
  engine::KvPagingConfig c;
  c.home_file = o.kv_home;
  if (o.kv_resident.empty()) {
    if (!o.kv_home.empty()) return invalid("--kv-home needs --kv-resident (SIZE or N%)");
    return c;
  }
  const std::string& t = o.kv_resident;
  if (t.back() == '%') {
    char* end = nullptr;
    const double pct = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() - 1 || !(pct > 0.0 && pct <= 100.0))
      return invalid("--kv-resident: bad share '" + t + "' (want 1% to 100%)");
    c.resident_fraction = pct / 100.0;
    return c;
  }
  auto bytes = devices::parse_byte_size(t);
  if (!bytes.ok()) return bytes.status().with_context("--kv-resident");
  if (*bytes == 0) return invalid("--kv-resident must be positive");
  c.resident_bytes = *bytes;
  return c;
}

// The partitions a --devices list needs: one more than the highest "part:K" it names. Names
// that are not "part:" and a digit string are left for the device list to reject.
Result<int> partitions_named(const std::string& list) {
  int wanted = 0;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.rfind("part:", 0) != 0) continue;
    const std::string index = name.substr(5);
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) continue;
    errno = 0;
    const long long k = std::strtoll(index.c_str(), nullptr, 10);
    if (errno == ERANGE || k >= kMaxPartitions) {
      return invalid("--devices: partition index " + index + " is out of range [0, " +
                     std::to_string(kMaxPartitions - 1) + "]");
    }
    wanted = std::max(wanted, static_cast<int>(k) + 1);
  }
  return wanted;
}

Result<std::vector<backend::Device*>> make_devices(const LayoutOptions& o) {
  size_t budget = 0;
  if (!o.device_mem.empty()) {
    auto b = devices::parse_byte_size(o.device_mem);
    if (!b.ok()) return b.status().with_context("--device-mem");
    budget = *b;
  }
  if (o.partitions < 0 || o.partitions > kMaxPartitions) {
    return invalid("--partitions must be in [0, " + std::to_string(kMaxPartitions) + "], got " +
                   std::to_string(o.partitions));
  }
  if (budget != 0 && o.partitions == 0 && o.devices.empty())
    return invalid("--device-mem needs --partitions N or --devices part:K");
  const int n = o.partitions > 0 ? static_cast<int>(o.partitions) : 0;
  std::vector<backend::Device*> devs;
  if (n > 0 || !o.devices.empty()) {
    // --devices part:K needs the partitions to exist; make as many as the list names.
    int wanted = n;
    if (wanted == 0) {
      auto named = partitions_named(o.devices);
      if (!named.ok()) return named.status();
      wanted = *named;
    }
    if (wanted > 0) {
      auto parts = devices::make_partitions(wanted, budget);
      if (!parts.ok()) return parts.status();
      devs = *parts;
    }
  }
  if (!o.devices.empty()) {
    auto listed = devices::parse_device_list(o.devices);
    if (!listed.ok()) return listed.status();
    devs.clear();
    for (backend::Device* d : *listed) {
      if (d != &devices::host_device()) devs.push_back(d);
    }
  }
  return devs;
}

}  // namespace

void add_layout_flags(FlagSet& f, LayoutOptions& o) {
  f.add_string({"--devices", "-dev"}, &o.devices, "offload devices, e.g. part:0,part:1");
  f.add_int({"--partitions"}, &o.partitions, "split the CPU into N partition devices");
  f.add_string({"--device-mem"}, &o.device_mem, "memory budget per partition, e.g. 512M");
  f.add_int({"-ngl", "--n-gpu-layers"}, &o.n_gpu_layers, "layers to put on the devices (0)");
  f.add_string({"-sm", "--split-mode"}, &o.split_mode, "none or layer (layer)");
  f.add_string({"-ts", "--tensor-split"}, &o.tensor_split,
               "layer proportions per device, e.g. 3,1");
  f.add_bool({"-nkvo", "--no-kv-offload"}, &o.no_kv_offload, "keep the KV cache on the host");
  f.add_bool({"--no-pipeline"}, &o.no_pipeline,
             "finish each micro-batch before queuing the next (no overlap across devices)");
  f.add_bool({"--paged"}, &o.paged,
             "run through the paged path: a boundary schedule cutting after every layer, each "
             "cut signalling a timeline the engine waits on (same output)");
  f.add_string({"--kv-resident"}, &o.kv_resident,
               "KV paging: keep only this much KV cache resident per device, e.g. 256M or 25% "
               "(the rest lives in host memory or --kv-home; implies --paged)");
  f.add_string({"--kv-home"}, &o.kv_home, "KV paging: keep the whole KV cache in this file");
}

std::string describe_layout(const engine::Layout& layout, int64_t n_layer) {
  std::string out;
  for (int d = -1; d < static_cast<int>(layout.devices.size()); ++d) {
    const std::string name =
        d < 0 ? "cpu" : std::string(layout.devices[static_cast<size_t>(d)]->name());
    std::string what = d < 0 ? "input" : "";
    int64_t first = -1;
    auto flush = [&](int64_t end) {
      if (first < 0) return;
      what += (what.empty() ? "" : ", ") + std::string("layers ") + std::to_string(first) +
              (end - 1 > first ? "-" + std::to_string(end - 1) : "");
      first = -1;
    };
    for (int64_t l = 0; l < n_layer; ++l) {
      if (layout.layer_device[static_cast<size_t>(l)] == d) {
        if (first < 0) first = l;
      } else {
        flush(l);
      }
    }
    flush(n_layer);
    if (layout.output_device == d) what += (what.empty() ? "" : ", ") + std::string("output");
    if (what.empty()) continue;
    out += (out.empty() ? "" : "; ") + name + ": " + what;
  }
  if (!layout.kv_offload) out += " (KV cache on the host)";
  return out;
}

Result<Loaded> load_with_layout(const std::string& model_path, const LayoutOptions& o,
                                const engine::SessionParams& params) {
  if (o.split_mode != "none" && o.split_mode != "layer") {
    // A usage error like any other -sm value, though a planned one.
    if (o.split_mode == "tensor") return invalid("-sm tensor is not supported yet (none or layer)");
    return invalid("-sm must be none or layer, got '" + o.split_mode + "'");
  }
  auto devs = make_devices(o);
  if (!devs.ok()) return devs.status();
  auto split = parse_split(o.tensor_split);
  if (!split.ok()) return split.status();
  auto kv_paging = parse_kv_paging(o);
  if (!kv_paging.ok()) return kv_paging.status();
  engine::LayoutParams lp;
  lp.devices = *devs;
  // -sm none: everything offloaded goes to the first device.
  if (o.split_mode == "none" && lp.devices.size() > 1)
    lp.devices.erase(lp.devices.begin() + 1, lp.devices.end());
  lp.n_gpu_layers = o.n_gpu_layers;
  lp.tensor_split = *split;
  lp.kv_offload = !o.no_kv_offload;
  if (lp.n_gpu_layers > 0 && lp.devices.empty()) {
    return invalid("-ngl needs devices: pass --partitions N or --devices LIST");
  }

  // The layout needs the layer count before the weights are placed: read just the header.
  // The session's size is checked against the machine here too, before anything is allocated.
  engine::SessionParams sp = params;
  sp.pipeline = !o.no_pipeline;
  sp.paged = o.paged;
  sp.kv_paging = *kv_paging;
  int64_t n_layer = 0;
  {
    auto file = gguf::File::open(model_path);
    if (!file.ok()) return file.status();
    auto hp = model::read_hparams(*file);
    if (!hp.ok()) return hp.status();
    n_layer = hp->n_layer;
    STRATA_RETURN_IF_ERROR(check_session(*hp, sp, devices::host_device().memory().total));
  }
  auto layout = engine::make_layout(n_layer, lp);
  if (!layout.ok()) return layout.status();
  Loaded out;
  out.layout = *layout;
  auto m =
      model::Model::load(model_path, engine::weight_placement(out.layout, devices::host_device()));
  if (!m.ok()) return m.status();
  out.model = std::move(m).value();
  auto s = engine::Session::create(*out.model, devices::host_device(), out.layout, sp);
  if (!s.ok()) return s.status();
  out.session = std::move(s).value();
  return out;
}

}  // namespace strata::tools
