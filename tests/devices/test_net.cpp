#include "test_net.h"

#include "core/ops.h"
#include "core/types.h"

namespace strata::devices::test {

std::vector<float> pseudo_random(size_t n, uint32_t seed) {
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return out;
}

Result<std::unique_ptr<Net>> Net::create(backend::Device& device, const NetShape& shape) {
  std::unique_ptr<Net> net(new Net(device));
  core::Context& ctx = net->ctx_;
  core::Tensor* w = ctx.new_tensor(shape.weight_type, {shape.k, shape.k, 1, 1}, "w");
  net->x_ = ctx.new_tensor(core::Type::kF32, {shape.k, shape.n, 1, 1}, "x");
  net->x_->flags |= core::kFlagInput;
  core::Tensor* h = net->x_;
  for (int i = 0; i < shape.depth; ++i) {
    h = core::mul_mat(ctx, w, core::rms_norm(ctx, core::mul_mat(ctx, w, h), 1e-5f));
  }
  net->out_ = h;
  STRATA_RETURN_IF_ERROR(ctx.status());
  core::Tensor* outs[] = {net->out_};
  net->graph_ = core::build_graph(outs);

  auto buf = device.buffer_type().allocate(w->nbytes());
  if (!buf.ok()) return buf.status();
  net->weights_ = std::move(buf).value();
  STRATA_RETURN_IF_ERROR(net->weights_->place(*w, 0));
  const std::vector<float> values = pseudo_random(static_cast<size_t>(w->nelements()), 7);
  std::vector<uint8_t> bytes(w->nbytes());
  core::traits(w->type).from_float(values.data(), bytes.data(), w->nelements());
  STRATA_RETURN_IF_ERROR(net->weights_->write(*w, bytes.data(), 0, bytes.size()));

  STRATA_RETURN_IF_ERROR(net->galloc_.allocate(net->graph_));
  return net;
}

std::vector<float> Net::make_input(uint32_t seed) const {
  return pseudo_random(static_cast<size_t>(x_->nelements()), seed);
}

Result<std::vector<float>> run_net(backend::Backend& backend, const Net& net,
                                   const std::vector<float>& input) {
  std::vector<float> out(static_cast<size_t>(net.output()->nelements()));
  STRATA_RETURN_IF_ERROR(
      backend.set_async(*net.input(), input.data(), 0, input.size() * sizeof(float)));
  STRATA_RETURN_IF_ERROR(backend.compute_async(net.graph()));
  STRATA_RETURN_IF_ERROR(
      backend.get_async(*net.output(), out.data(), 0, out.size() * sizeof(float)));
  STRATA_RETURN_IF_ERROR(backend.synchronize());
  return out;
}

}  // namespace strata::devices::test
