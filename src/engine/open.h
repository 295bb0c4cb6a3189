// Opening a model with a device layout, and sessions over it: the one way the command line,
// a server and the C API turn layout parameters into devices, a layout, placed weights and
// a session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/kv_cache.h"
#include "engine/layout.h"
#include "engine/session.h"
#include "model/model.h"

namespace strata::engine {

/// How offloaded layers are spread over the devices (llama.cpp's -sm).
enum class SplitMode {
  kNone,    ///< everything offloaded goes to the first device
  kLayer,   ///< whole layers per device, in tensor_split proportions
  kTensor,  ///< every layer's tensors split across the devices (a meta device); one device: none
};

/// Layout parameters. Messages name the command-line flags that set each field, which is
/// how llama.cpp's users know them.
struct OpenParams {
  /// Comma-separated device names ("part:0,part:1"); empty: the partitions made here.
  std::string devices;
  /// Split the CPU into this many partition devices (0: none unless `devices` names some).
  int64_t partitions = 0;
  /// Memory budget of each partition in bytes (0: none); needs partitions.
  size_t device_mem = 0;
  /// The last N layers go to the devices; N > n_layer offloads the output too.
  int64_t n_gpu_layers = 0;
  SplitMode split_mode = SplitMode::kLayer;
  /// Proportions of the offloaded layers per device (empty: even).
  std::vector<float> tensor_split;
  /// Each layer's KV cache lives with the layer (false: on the host).
  bool kv_offload = true;
  /// Queue consecutive micro-batches without waiting, so devices of a layer split overlap.
  bool pipeline = true;
  /// Run through the paged path, cut after every layer (same results).
  bool paged = false;
  /// KV paging: only part of the KV cache resident (implies paged).
  KvPagingConfig kv_paging;
  /// Layers on a device whose budget cannot hold their weights stream them from the model
  /// file instead of failing (see model::WeightStream); implies paged.
  bool stream_weights = false;
  /// The host's own copy of the weights (the huge-page copy) takes the layout its kernels read
  /// fastest (cpu/weight_forms.h); false keeps the file's layout.
  bool repack = true;
  /// Weight slots per streaming device (0: chosen from its budget). Set, a device's layers
  /// stream even when they would fit.
  int stream_slots = 0;
  /// A budget for host memory (0: none): the host alone runs as one budgeted device over all
  /// its cores, holding every layer and the output, with weights streamed when they do not
  /// fit. It cannot be combined with devices, partitions or -ngl.
  size_t mem_budget = 0;
  /// Prefill order and band size (see SessionParams).
  PrefillOrder prefill = PrefillOrder::kAuto;
  int64_t band_layers = 0;
};

/// A model whose weights are placed as its layout says.
struct OpenedModel {
  std::unique_ptr<model::Model> model;
  Layout layout;
  /// What the layout was made from; sessions take their execution options from it.
  OpenParams params;
};

/// A model and one session over it. The session is declared last so it is destroyed first.
struct Opened {
  std::unique_ptr<model::Model> model;
  Layout layout;
  std::unique_ptr<Session> session;
};

/// Makes the devices (partitions are owned by the devices registry for the whole process)
/// and the layout, then loads the model with its weights placed by the layout. Bad
/// parameters are kInvalidArgument. With -sm tensor the devices become one meta device that
/// the offloaded layers go to, split in -ts proportions (layout.note says when a single
/// device makes it -sm none).
Result<OpenedModel> open_model(const std::string& path, const OpenParams& params);

/// A session over a model from open_model, laid out the same way; `params` get the model's
/// pipeline, paged and KV-paging options. Its size is checked against the machine's memory
/// first (kOutOfMemory, naming both, rather than failing deep inside an allocation).
Result<std::unique_ptr<Session>> open_session(const OpenedModel& model,
                                              const SessionParams& params);

/// open_model then open_session, with the session's size checked from the file's header
/// before any weight is read.
Result<Opened> open(const std::string& path, const OpenParams& params,
                    const SessionParams& session_params);

}  // namespace strata::engine
