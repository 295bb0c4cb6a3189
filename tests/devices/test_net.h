// A small network for the device tests: out = W * rms_norm(W * x) repeated `depth` times,
// with its weights and compute tensors placed in one device's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/device.h"
#include "core/context.h"
#include "core/graph.h"
#include "memory/buffer.h"
#include "memory/graph_allocator.h"

namespace strata::devices::test {

struct NetShape {
  core::Type weight_type = core::Type::kF32;
  int64_t k = 64;  ///< row length of x and size of the square W
  int64_t n = 4;   ///< columns of x
  int depth = 1;   ///< how many W * rms_norm(W * .) blocks
};

class Net {
 public:
  /// Builds the graph, puts the weights (deterministic values) in a buffer of `device` and
  /// places the graph with a GraphAllocator on the device's buffer type.
  static Result<std::unique_ptr<Net>> create(backend::Device& device, const NetShape& shape);

  core::Tensor* input() const { return x_; }
  core::Tensor* output() const { return out_; }
  const core::Graph& graph() const { return graph_; }
  /// F32 elements of the input, deterministic.
  std::vector<float> make_input(uint32_t seed) const;

 private:
  explicit Net(backend::Device& device) : galloc_(device.buffer_type()) {}

  core::Context ctx_;
  core::Tensor* x_ = nullptr;
  core::Tensor* out_ = nullptr;
  core::Graph graph_;
  std::unique_ptr<memory::Buffer> weights_;
  memory::GraphAllocator galloc_;
};

/// Computes `net` on `backend` for `input` and returns its output: set, compute, get,
/// synchronize.
Result<std::vector<float>> run_net(backend::Backend& backend, const Net& net,
                                   const std::vector<float>& input);

/// Deterministic values in [-1, 1).
std::vector<float> pseudo_random(size_t n, uint32_t seed);

}  // namespace strata::devices::test
