#include "cpu/cpu_backend.h"

#include <cstring>
#include <string>

#include "cpu/graph_compute.h"

namespace strata::cpu {
namespace {

Status check_access(const core::Tensor& t, size_t offset, size_t size) {
  if (t.data == nullptr)
    return error(ErrorCode::kInternal, "tensor '" + t.name + "' is not placed");
  if (offset > t.nbytes() || size > t.nbytes() - offset) {
    return error(ErrorCode::kInvalidArgument, "copy of " + std::to_string(size) + " bytes at " +
                                                  std::to_string(offset) + " is outside tensor '" +
                                                  t.name + "' (" + std::to_string(t.nbytes()) +
                                                  " bytes)");
  }
  return {};
}

}  // namespace

CpuBackend::CpuBackend(backend::Device& device, int n_threads)
    : device_(&device), pool_(n_threads) {}

Status CpuBackend::compute_async(const core::Graph& graph) {
  return compute_graph(graph, pool_, scratch_);
}

Status CpuBackend::set_async(core::Tensor& t, const void* src, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(check_access(t, offset, size));
  std::memcpy(static_cast<uint8_t*>(t.data) + offset, src, size);
  return {};
}

Status CpuBackend::get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(check_access(t, offset, size));
  std::memcpy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
  return {};
}

}  // namespace strata::cpu
