// Quick machine probes for `strata bench`: how fast this machine streams memory and how fast
// it multiplies, so measured speeds can be stated as a share of what the hardware allows.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace strata::tools {

struct BandwidthProbe {
  double bytes_per_second = 0.0;  ///< best run
  size_t buffer_bytes = 0;
  int threads = 0;
  int runs = 0;
};

/// Read bandwidth: `threads` threads stream disjoint slices of one buffer (1 GiB, or less when
/// the allocation fails, never under 256 MiB: far larger than any LLC) and the best of a few
/// passes counts. About half a second; kOutOfMemory when no buffer could be had.
Result<BandwidthProbe> probe_read_bandwidth(int threads);

/// The arithmetic a model's matrix products use.
enum class ComputeKind {
  kInt8Dot,  ///< int8 multiply-adds into int32 (quantized weights against q8 activations)
  kF32Fma,   ///< f32 fused multiply-adds (float weights)
  kBF16Dot,  ///< bf16 pair dot products into f32 (AVX-512 BF16; bf16 weights where the kernels
             ///< use them), else as kF32Fma
};

struct ComputeProbe {
  ComputeKind kind = ComputeKind::kF32Fma;
  double ops_per_second = 0.0;  ///< a multiply-add counts as two operations; best run
  std::string isa;              ///< the instructions that reached it, e.g. "avx512-vnni"
  int threads = 0;
};

/// Compute peak: every thread runs independent chains of the widest instruction for `kind`
/// that both the CPU and the kernel set named `kernel_set` (cpu::KernelSet::name) have, long
/// enough to hide latency; the best of a few runs of about 50 ms counts.
ComputeProbe probe_compute_peak(ComputeKind kind, int threads, std::string_view kernel_set);

/// "int8 dot" or "f32 fma".
std::string compute_kind_name(ComputeKind kind);

}  // namespace strata::tools
