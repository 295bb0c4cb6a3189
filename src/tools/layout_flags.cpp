#include "tools/layout_flags.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "devices/byte_size.h"
#include "meta/meta_device.h"

namespace strata::tools {
namespace {

Status invalid(const std::string& what) {
  return error(ErrorCode::kInvalidArgument, what);
}

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

}  // namespace

void add_layout_flags(FlagSet& f, LayoutOptions& o) {
  f.add_string({"--devices", "-dev"}, &o.devices, "offload devices, e.g. part:0,part:1");
  f.add_int({"--partitions"}, &o.partitions, "split the CPU into N partition devices");
  f.add_string({"--device-mem"}, &o.device_mem, "memory budget per partition, e.g. 512M");
  f.add_int({"-ngl", "--n-gpu-layers"}, &o.n_gpu_layers, "layers to put on the devices (0)");
  f.add_string({"-sm", "--split-mode"}, &o.split_mode, "none, layer or tensor (layer)");
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
               "(the rest lives in host memory or --kv-home; implies --paged; with -sm tensor "
               "each device pages its own KV heads)");
  f.add_string({"--kv-home"}, &o.kv_home, "KV paging: keep the whole KV cache in this file");
  f.add_bool({"--stream-weights"}, &o.stream_weights,
             "layers on a device whose budget cannot hold their weights read them from the "
             "model file as they run, through a few slots (implies --paged)");
  f.add_bool({"--no-repack"}, &o.no_repack,
             "keep the file's layout in the host's copy of the weights (default: q4_0, q4_k and "
             "q8_0 matrices are regrouped into the layout the AVX-512 kernels read fastest)");
  f.add_int({"--stream-slots"}, &o.stream_slots,
            "weight streaming: layer slots per device (default: what half of the budget left "
            "holds); set, the device's layers stream even when they fit");
  f.add_string({"--mem-budget"}, &o.mem_budget,
               "run within this much host memory, e.g. 2G: the host becomes one budgeted device "
               "holding every layer, streaming weights from the model file when they do not fit");
  f.add_string({"--prefill"}, &o.prefill,
               "token (each micro-batch through every layer) or banded (every micro-batch "
               "through a band of layers, then the next band); default: banded when weights "
               "stream");
  f.add_int({"--band-layers"}, &o.band_layers,
            "banded prefill: layers per band (default: half the weight slots)");
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

Result<engine::OpenParams> parse_layout_options(const LayoutOptions& o) {
  engine::OpenParams p;
  if (o.split_mode == "none") {
    p.split_mode = engine::SplitMode::kNone;
  } else if (o.split_mode == "layer") {
    p.split_mode = engine::SplitMode::kLayer;
  } else if (o.split_mode == "tensor") {
    p.split_mode = engine::SplitMode::kTensor;
  } else {
    return invalid("-sm must be none, layer or tensor, got '" + o.split_mode + "'");
  }
  if (!o.device_mem.empty()) {
    auto b = devices::parse_byte_size(o.device_mem);
    if (!b.ok()) return b.status().with_context("--device-mem");
    p.device_mem = *b;
  }
  p.devices = o.devices;
  p.partitions = o.partitions;
  auto split = parse_split(o.tensor_split);
  if (!split.ok()) return split.status();
  auto kv_paging = parse_kv_paging(o);
  if (!kv_paging.ok()) return kv_paging.status();
  p.n_gpu_layers = o.n_gpu_layers;
  p.tensor_split = *split;
  p.kv_offload = !o.no_kv_offload;
  p.pipeline = !o.no_pipeline;
  p.paged = o.paged;
  p.kv_paging = *kv_paging;
  p.stream_weights = o.stream_weights;
  p.repack = !o.no_repack;
  if (o.stream_slots < 0 || o.stream_slots > 4096)
    return invalid("--stream-slots must be in [0, 4096]");
  p.stream_slots = static_cast<int>(o.stream_slots);
  if (!o.mem_budget.empty()) {
    auto b = devices::parse_byte_size(o.mem_budget);
    if (!b.ok()) return b.status().with_context("--mem-budget");
    if (*b == 0) return invalid("--mem-budget must be positive");
    p.mem_budget = *b;
  }
  if (o.prefill == "token") {
    p.prefill = engine::PrefillOrder::kToken;
  } else if (o.prefill == "banded") {
    p.prefill = engine::PrefillOrder::kBanded;
  } else if (o.prefill != "auto") {
    return invalid("--prefill must be token, banded or auto, got '" + o.prefill + "'");
  }
  if (o.band_layers < 0) return invalid("--band-layers must not be negative");
  p.band_layers = o.band_layers;
  return p;
}

std::string describe_shard_memory(const Loaded& loaded) {
  std::string out;
  for (backend::Device* d : loaded.layout.devices) {
    const auto* meta = dynamic_cast<const meta::MetaDevice*>(d);
    if (meta == nullptr) continue;
    const size_t n = meta->members().size();
    std::vector<size_t> weights(n, 0), kv(n, 0);
    auto add = [&](std::vector<size_t>& to, const core::Tensor* t) {
      if (t == nullptr) return;
      const std::vector<size_t> b = meta->shard_bytes(*t);
      for (size_t i = 0; i < n; ++i) to[i] += b[i];
    };
    for (const auto& info : loaded.model->weights().info) add(weights, info.tensor);
    const model::KvCacheTensors& cache = loaded.session->cache().tensors();
    for (const core::Tensor* t : cache.k) add(kv, t);
    for (const core::Tensor* t : cache.v) add(kv, t);
    const std::vector<meta::MemberBytes> held = meta->member_bytes();
    for (size_t i = 0; i < n; ++i) {
      char line[256];
      std::snprintf(line, sizeof line, "%-8s shard of %s: weights %s, KV %s, compute %s\n",
                    std::string(meta->members()[i]->name()).c_str(),
                    std::string(meta->name()).c_str(), memory::format_bytes(weights[i]).c_str(),
                    memory::format_bytes(kv[i]).c_str(),
                    memory::format_bytes(held[i].compute).c_str());
      out += line;
    }
  }
  return out;
}

Result<Loaded> load_with_layout(const std::string& model_path, const LayoutOptions& o,
                                const engine::SessionParams& params) {
  auto p = parse_layout_options(o);
  if (!p.ok()) return p.status();
  auto loaded = engine::open(model_path, *p, params);
  if (loaded.ok() && !loaded->layout.note.empty()) {
    std::fprintf(stderr, "strata: %s\n", loaded->layout.note.c_str());
  }
  return loaded;
}

}  // namespace strata::tools
