// The table through which the rest of strata reaches one kernel set, and the types it names.
//
// Every file of this folder is compiled once per kernel set (see src/cpu/CMakeLists.txt), with
// that set's instruction-set flags and inside its own namespace, strata::cpu::<set>
// (STRATA_KERNEL_NS). Each set fills one KernelSet (kernel_set.cpp); src/cpu/kernel_sets.cpp
// picks the table the CPU can run. This header holds no code, so the sets and the baseline
// code that calls them share it without sharing a single compiled function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/blocks.h"
#include "core/float16.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/types.h"
#include "cpu/kernels/kernel_args.h"

namespace strata::cpu {

/// out[iw * ldo_w + ia * ldo_a] = dot(w row iw, a row ia) for iw < nw, ia < na. Rows hold k
/// elements; weight rows are `ldw` bytes apart, activation rows `lda` bytes apart.
using DotTileFn = void (*)(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a,
                           size_t lda, int na, float* out, int64_t ldo_w, int64_t ldo_a);

/// One slice [k0, k1) of the elements of a DotTileFn's rows of k elements, for kernels whose
/// outputs are sums of 16 lanes: the lanes of output (iw, ia) wait in lanes[(iw * na + ia) *
/// 16 ...] between slices. The first slice (k0 == 0) starts them from zero, the last (k1 == k)
/// writes the outputs as the whole tile does, with the same bits.
using DotSliceFn = void (*)(int64_t k, int64_t k0, int64_t k1, const uint8_t* w, size_t ldw, int nw,
                            const uint8_t* a, size_t lda, int na, float* lanes, float* out,
                            int64_t ldo_w, int64_t ldo_a);

/// Optional slices of a tile (both null or zero where the kernel has none): prefill walks rows
/// longer than `elements` in slices of that many, so that an activation tile's slice stays in
/// L1 while the chunk's weight rows pass. Rows split only where k is a multiple of `step`.
struct DotSlices {
  DotSliceFn fn = nullptr;
  int64_t elements = 0;
  int64_t step = 0;
};

/// How mul_mat computes with one weight type.
struct DotKernels {
  core::Type act_type;  ///< activations are rounded to this type before the dot products
  int max_w;            ///< largest nw the tile kernel accepts
  int max_a;            ///< largest na the tile kernel accepts
  DotTileFn tile;
  /// The same dot products summed in llama.cpp's vector-dot order (ggml_vec_dot_*), which its
  /// mul_mat_id always takes while its mul_mat takes a GEMM with another order when k allows;
  /// null where the two orders agree (the block types).
  DotTileFn vector_order_tile = nullptr;
  /// Prefill walks a chunk activation tile by activation tile (the tile in L1, the chunk's
  /// weight rows from L2) rather than weight tile by weight tile: for kernels that compute
  /// so fast that streaming the activations from L2 would bind them.
  bool act_tiles_outer = false;
  /// Optional: tile without its software prefetches, for the act_tiles_outer walk, where a
  /// chunk's weight rows come from L2 for every activation tile but the first (asking for
  /// lines already cached cost 5-10% of the f16 and bf16 GEMMs on Zen 5). Same bits as tile.
  DotTileFn cached_tile = nullptr;
  /// Optional: the act_tiles_outer walk's tiles in slices of their rows.
  DotSlices slices = {};
};

/// A packed mul_mat path (see dot_packed.h).
struct PackedDot {
  int max_w;  ///< largest nw the tile kernel accepts
  int max_a;  ///< largest na the tile kernel accepts
  /// Elements per packed group: pack and act_row_bytes take any multiple of it, and packing a
  /// row piece by piece (at multiples of it) gives the same bytes as packing it whole.
  int64_t group;
  /// Bytes of one packed activation row of k elements (a multiple of 64).
  size_t (*act_row_bytes)(int64_t k);
  /// A dense f32 row of k elements to its packed form; dst is 64-byte aligned.
  void (*pack)(const float* src, uint8_t* dst, int64_t k);
  /// As DotKernels::tile, with activation rows in pack's layout, 64-byte aligned.
  DotTileFn tile;
  /// Optional (null where the kernel has none): up to max_w weight rows rearranged once into
  /// a panel of panel_bytes(k) bytes (64-byte aligned), which panel_tile reads in their place
  /// (its ldw is unused), so that prefill rearranges a chunk's rows once for all its
  /// activation tiles. Every output equals tile's, bit for bit.
  size_t (*panel_bytes)(int64_t k) = nullptr;
  void (*pack_panel)(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) = nullptr;
  DotTileFn panel_tile = nullptr;
  /// As DotKernels::act_tiles_outer, where there is no panel.
  bool act_tiles_outer = false;
  /// As DotKernels::cached_tile.
  DotTileFn cached_tile = nullptr;
  /// Nonzero where tile's outputs are sums of lanes of fused multiply-adds from zero, steps of
  /// this many elements: for k a multiple of it, a tile given a shorter multiple of it, past
  /// which its activation rows hold only zeros, gives the same bits (a zero product leaves a
  /// lane's sum as it was), so mul_mat may stop there.
  int64_t zero_tail_step = 0;
};

/// One kernel set: the node entry points of dispatch.h, then the internals that the kernel
/// tests (tests/cpu) check directly, so that they check the set that runs.
struct KernelSet {
  const char* name;  ///< as STRATA_KERNELS takes it: "avx2", "avx512", ...

  Status (*check_node)(const core::Tensor& node);
  size_t (*work_size)(const core::Tensor& node, int n_threads);
  Status (*compute_node)(const core::Tensor& node, const KernelArgs& args);
  /// See dispatch.h's shares_converted_input.
  bool (*shares_converted_input)(const core::Tensor& first, const core::Tensor& next);

  const DotKernels* (*dot_kernels)(core::Type weight_type);
  const PackedDot* (*packed_dot)(core::Type weight_type, int64_t k);
  /// Flash attention's f16 score kernel (packed_dot_f16_chained), which returns nullptr where
  /// the set has none.
  const PackedDot* (*flash_scores)(core::Type weight_type, int64_t k);
  void (*convert_activations)(core::Type act_type, const float* src, void* dst, int64_t n);
  void (*quantize_q8_0)(const float* src, void* dst, int64_t n);
  void (*quantize_q8_k)(const float* src, void* dst, int64_t n);
  void (*q8_0_block_portable)(const float* x, core::BlockQ8_0& b);
  void (*f16_to_f32)(const core::Half* src, float* dst, int64_t n);
  void (*f32_to_f16)(const float* src, core::Half* dst, int64_t n);
  void (*bf16_to_f32)(const core::BFloat16* src, float* dst, int64_t n);
  void (*f32_to_bf16)(const float* src, core::BFloat16* dst, int64_t n);
  /// e^x for 8 floats with the set's vector exp (simd::exp); nullptr where it has none.
  void (*vector_exp8)(const float* x, float* y);
  /// The same e^x for 16 floats in 512-bit registers; nullptr without AVX-512.
  void (*vector_exp16)(const float* x, float* y);
  /// Whether bf16 dot products take AVX-512 BF16 pairs, which round in another order
  /// (dot_float.cpp).
  bool bf16_pairs;
  /// Whether the float and int8 sums follow llama.cpp's order (every SIMD set does; the scalar
  /// set's portable loops do not), which the golden tests compare bit for bit.
  bool llama_order;
};

}  // namespace strata::cpu
