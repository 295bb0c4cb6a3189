#include "core/context.h"

namespace strata::core {

Tensor* Context::new_tensor(Type type, std::array<int64_t, kMaxDims> ne, std::string name) {
  Tensor& t = tensors_.emplace_back();
  t.type = type;
  t.ne = ne;
  t.nb = contiguous_strides(type, ne);
  t.name = std::move(name);
  return &t;
}

Tensor* Context::new_like(const Tensor& like) {
  return new_tensor(like.type, like.ne);
}

void Context::fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
}

}  // namespace strata::core
