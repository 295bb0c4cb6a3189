// The device-layout flags shared by run, bench and perplexity: --devices/--partitions/
// --device-mem, -ngl, -sm, -ts, --no-kv-offload, --no-pipeline, --paged, --kv-resident,
// --kv-home, --stream-weights, --stream-slots, --mem-budget, --prefill, --band-layers; parsed into
// engine::OpenParams, with which engine::open loads a model and session.
#pragma once

#include <string>

#include "engine/layout.h"
#include "engine/open.h"
#include "engine/session.h"
#include "tools/flags.h"

namespace strata::tools {

struct LayoutOptions {
  std::string devices;     ///< "part:0,part:1"
  int64_t partitions = 0;  ///< make N CPU partitions
  std::string device_mem;  ///< budget per partition ("512M")
  int64_t n_gpu_layers = 0;
  std::string split_mode = "layer";
  std::string tensor_split;  ///< "3,1"
  bool no_kv_offload = false;
  bool no_pipeline = false;      ///< run micro-batches one at a time across devices
  bool paged = false;            ///< run through the paged path, cut after every layer
  std::string kv_resident;       ///< KV paging: resident KV per device, "256M" or "25%"
  std::string kv_home;           ///< KV paging: the home file (host memory when empty)
  bool stream_weights = false;   ///< stream the weights of layers a device cannot hold
  bool no_repack = false;        ///< keep the file's weight layout in the host's copy
  int64_t stream_slots = 0;      ///< weight slots per streaming device (0: from its budget)
  std::string mem_budget;        ///< host memory budget ("2G"): the host as a budgeted device
  std::string prefill = "auto";  ///< token, banded or auto
  int64_t band_layers = 0;       ///< layers per band (0: from the weight slots)
};

void add_layout_flags(FlagSet& flags, LayoutOptions& o);

/// A model and a session laid out as the options say.
using Loaded = engine::Opened;

/// The options as the engine takes them. Flag values that do not parse are kInvalidArgument
/// naming the flag.
Result<engine::OpenParams> parse_layout_options(const LayoutOptions& o);

/// "cpu: input, output; part:0: layers 0-10 (+KV); part:1: layers 11-21 (+KV)".
std::string describe_layout(const engine::Layout& layout, int64_t n_layer);

/// For each device of a tensor split, one line per member: the bytes it holds of the weights
/// and the KV cache, and its compute buffer ("part:0   shard of tensor(part:0,part:1):
/// weights 312 MiB, KV 44 MiB, compute 18 MiB"); empty without a tensor split.
std::string describe_shard_memory(const Loaded& loaded);

/// parse_layout_options, then engine::open. Bad flag values are kInvalidArgument; a device out
/// of budget is kOutOfMemory naming the device.
Result<Loaded> load_with_layout(const std::string& model_path, const LayoutOptions& o,
                                const engine::SessionParams& params);

}  // namespace strata::tools
