// Owns the tensors of a graph under construction and its first construction error.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace strata::core {

/// Arena of tensors with stable addresses. Graph-building ops report bad arguments here
/// (the first error is kept) and return a placeholder, so building never aborts; callers
/// check status() once the graph is built.
class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// A new contiguous leaf tensor with no memory yet.
  Tensor* new_tensor(Type type, std::array<int64_t, kMaxDims> ne, std::string name = {});
  /// A tensor with the same shape and type as `like`, contiguous, no op.
  Tensor* new_like(const Tensor& like);

  /// Records a construction error (the first one wins).
  void fail(Status status);
  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

  size_t tensor_count() const { return tensors_.size(); }
  /// Every tensor created, in creation order.
  const std::deque<Tensor>& tensors() const { return tensors_; }
  std::deque<Tensor>& tensors() { return tensors_; }

 private:
  std::deque<Tensor> tensors_;
  Status status_;
};

}  // namespace strata::core
