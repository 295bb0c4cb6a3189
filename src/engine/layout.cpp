#include "engine/layout.h"

#include <cmath>
#include <string>

namespace strata::engine {

backend::Device* Layout::device_of(int64_t layer) const {
  int d = -1;
  if (layer >= 0 && layer < static_cast<int64_t>(layer_device.size())) {
    d = layer_device[static_cast<size_t>(layer)];
  } else if (layer >= static_cast<int64_t>(layer_device.size())) {
    d = output_device;
  }
  return d < 0 ? nullptr : devices[static_cast<size_t>(d)];
}

backend::Device* Layout::kv_device_of(int64_t layer) const {
  return kv_offload ? device_of(layer) : nullptr;
}

int64_t Layout::layers_on(int device) const {
  int64_t n = 0;
  for (int d : layer_device) n += d == device ? 1 : 0;
  return n;
}

Result<Layout> make_layout(int64_t n_layer, const LayoutParams& p) {
  Layout l;
  l.devices = p.devices;
  l.kv_offload = p.kv_offload;
  l.layer_device.assign(static_cast<size_t>(n_layer), -1);
  if (p.n_gpu_layers < 0) return error(ErrorCode::kInvalidArgument, "-ngl must not be negative");
  if (p.n_gpu_layers == 0 || p.devices.empty()) return l;
  const size_t n_dev = p.devices.size();
  std::vector<float> split = p.tensor_split;
  if (split.empty()) split.assign(n_dev, 1.0f);
  if (split.size() != n_dev) {
    return error(ErrorCode::kInvalidArgument, "-ts gives " + std::to_string(split.size()) +
                                                  " proportions for " + std::to_string(n_dev) +
                                                  " devices");
  }
  float total = 0.0f;
  for (float f : split) {
    if (!(f >= 0.0f))
      return error(ErrorCode::kInvalidArgument, "-ts proportions must not be negative");
    total += f;
  }
  if (total <= 0.0f)
    return error(ErrorCode::kInvalidArgument, "-ts proportions must not all be zero");

  const int64_t offloaded = std::min(p.n_gpu_layers, n_layer);
  const int64_t first = n_layer - offloaded;
  // Offloaded layer k goes to the first device whose cumulative share covers it.
  float cum = 0.0f;
  std::vector<int64_t> ends;
  for (float f : split) {
    cum += f / total;
    ends.push_back(static_cast<int64_t>(std::lround(cum * static_cast<float>(offloaded))));
  }
  ends.back() = offloaded;
  for (int64_t k = 0, d = 0; k < offloaded; ++k) {
    while (k >= ends[static_cast<size_t>(d)]) ++d;
    l.layer_device[static_cast<size_t>(first + k)] = static_cast<int>(d);
  }
  // As in llama.cpp, offloading more layers than the model has also moves the output layer,
  // to the device of the last block.
  if (p.n_gpu_layers > n_layer) l.output_device = l.layer_device.back();
  return l;
}

}  // namespace strata::engine
