// Which device holds each layer: llama.cpp's -ngl / -sm layer / -ts / --no-kv-offload.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/device.h"
#include "core/status.h"

namespace strata::engine {

struct LayoutParams {
  std::vector<backend::Device*> devices;  ///< offload targets in order (the host is implicit)
  int64_t n_gpu_layers = 0;  ///< the last N layers go to the devices; N > n_layer adds the output
  std::vector<float> tensor_split;  ///< proportions of the offloaded layers per device
  bool kv_offload = true;           ///< each layer's KV cache lives with the layer
};

/// The placement of every layer. Device index -1 is the host.
struct Layout {
  std::vector<backend::Device*> devices;
  std::vector<int> layer_device;  ///< per block
  int output_device = -1;
  bool kv_offload = true;
  /// Something the user should know about how the request was laid out (empty: nothing).
  std::string note;

  /// The device of layer `layer` (-1 input, n_layer output); nullptr for the host.
  backend::Device* device_of(int64_t layer) const;
  /// Where that layer's KV cache goes; nullptr for the host.
  backend::Device* kv_device_of(int64_t layer) const;
  /// Layers each device holds, for messages.
  int64_t layers_on(int device) const;
};

/// Splits the last `n_gpu_layers` layers across the devices in proportion to `tensor_split`
/// (even when empty), keeping the rest and the embeddings on the host.
Result<Layout> make_layout(int64_t n_layer, const LayoutParams& params);

}  // namespace strata::engine
