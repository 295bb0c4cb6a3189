// mul_mat_id: the mixture-of-experts product, out[:, i, t] = expert ids[i, t] x b[:, i % n_b1, t].
//
// Three phases, one barrier. Every thread first checks every id (a bad one fails the node with
// nothing written, the same error on every thread) and sorts the (slot, token) pairs by expert,
// stably, into its own scratch: the same order on every thread, so no thread waits for another.
// Each thread then converts its share of the pairs' activation rows to the weight type's dot
// type (packed where mul_mat packs) into shared scratch, in that expert-grouped order, so each
// expert's rows are contiguous. After the barrier, the chunks (expert x weight rows x
// activation rows) are split across threads and walked in tiles as mul_mat walks them, each tile
// written to a small buffer and scattered to its (slot, token) columns.
//
// The activations are converted by the functions mul_mat uses on whole rows, and every output
// is one tile-kernel dot product whose value does not depend on the tiling (dot.h): each row's
// result is bit-identical to mul_mat(expert matrix, that activation row), except for float
// weights, whose rows are summed in llama.cpp's vector-dot order whatever k is, as its
// mul_mat_id sums them (mul_mat takes its GEMM's order when k is a multiple of 16).
#include <algorithm>
#include <cstring>
#include <string>

#include "cpu/kernels/convert.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Tensor;
using core::Type;

// More activation rows than this in a chunk and a packed kernel's weight tile goes through a
// panel (as mul_mat's decode threshold).
constexpr int64_t kPanelMinActRows = 4;

struct Plan {
  const DotKernels* dk = nullptr;
  const PackedDot* packed = nullptr;
  int max_w = 1, max_a = 1;
  DotTileFn tile = nullptr;
  int64_t k = 0, m = 0, n_expert = 0, n_used = 0, n_tokens = 0, n_b1 = 1;
  size_t act_row = 0;    ///< bytes of one converted activation row
  size_t act_bytes = 0;  ///< shared: every pair's converted row
  // Per thread: the grouping (offsets [n_expert + 1], pairs [n_used * n_tokens]), a dense f32
  // row for strided activations, one tile's outputs and, where the packed kernel rearranges
  // weight rows (PackedDot::pack_panel), one weight tile's panel.
  size_t off_pairs = 0, off_row = 0, off_tile = 0, off_panel = 0, per_thread = 0;

  int64_t pairs() const { return n_used * n_tokens; }
};

Plan make_plan(const Tensor& dst) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  Plan p;
  p.k = w.ne[0];
  p.m = w.ne[1];
  p.n_expert = w.ne[2];
  p.n_used = ids.ne[0];
  p.n_tokens = ids.ne[1];
  p.n_b1 = x.ne[1];
  p.dk = dot_kernels(w.type);
  // Float weights keep llama.cpp's vector-dot order here, which the packed GEMM order is not.
  p.packed =
      p.dk != nullptr && p.dk->vector_order_tile == nullptr ? packed_dot(w.type, p.k) : nullptr;
  if (p.packed != nullptr) {
    p.max_w = p.packed->max_w;
    p.max_a = p.packed->max_a;
    p.tile = p.packed->tile;
    p.act_row = p.packed->act_row_bytes(p.k);
  } else {
    p.max_w = p.dk->max_w;
    p.max_a = p.dk->max_a;
    // llama.cpp's mul_mat_id sums float rows in its vector-dot order, whatever k is.
    p.tile = p.dk->vector_order_tile != nullptr ? p.dk->vector_order_tile : p.dk->tile;
    p.act_row = core::row_size(p.dk->act_type, p.k);
  }
  p.act_bytes = p.act_row * static_cast<size_t>(p.pairs());
  p.off_pairs = align_up(static_cast<size_t>(p.n_expert + 1) * sizeof(int32_t));
  p.off_row = p.off_pairs + align_up(static_cast<size_t>(p.pairs()) * sizeof(int32_t));
  p.off_tile = p.off_row + align_up(static_cast<size_t>(p.k) * sizeof(float));
  p.off_panel = p.off_tile + align_up(static_cast<size_t>(p.max_w * p.max_a) * sizeof(float));
  p.per_thread = p.off_panel;
  if (p.packed != nullptr && p.packed->pack_panel != nullptr) {
    p.per_thread += align_up(p.packed->panel_bytes(p.k));
  }
  return p;
}

inline int32_t id_at(const Tensor& ids, int64_t i, int64_t t) {
  int32_t v;
  std::memcpy(&v, static_cast<const uint8_t*>(ids.data) + i * ids.nb[0] + t * ids.nb[1], sizeof v);
  return v;
}

Status check_ids(const Tensor& ids, int64_t n_expert) {
  for (int64_t t = 0; t < ids.ne[1]; ++t) {
    for (int64_t i = 0; i < ids.ne[0]; ++i) {
      const int32_t id = id_at(ids, i, t);
      if (id < 0 || id >= n_expert) {
        return error(ErrorCode::kOutOfRange, "mul_mat_id: expert id " + std::to_string(id) +
                                                 " (ids[" + std::to_string(i) + ", " +
                                                 std::to_string(t) + "]) is outside [0, " +
                                                 std::to_string(n_expert) + ")");
      }
    }
  }
  return {};
}

// Counting sort of the pairs (p = t * n_used + i) by expert: expert e's pairs are
// pairs[offsets[e], offsets[e + 1]), in increasing p.
void group_pairs(const Tensor& ids, const Plan& p, int32_t* offsets, int32_t* pairs) {
  std::fill(offsets, offsets + p.n_expert + 1, 0);
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int64_t i = 0; i < p.n_used; ++i) ++offsets[id_at(ids, i, t) + 1];
  }
  for (int64_t e = 0; e < p.n_expert; ++e) offsets[e + 1] += offsets[e];
  // offsets[e] serves as expert e's write cursor, then is restored from its successor's start.
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int64_t i = 0; i < p.n_used; ++i) {
      pairs[offsets[id_at(ids, i, t)]++] = static_cast<int32_t>(t * p.n_used + i);
    }
  }
  for (int64_t e = p.n_expert; e > 0; --e) offsets[e] = offsets[e - 1];
  offsets[0] = 0;
}

void convert_pairs(const Tensor& x, const Plan& p, const int32_t* pairs, uint8_t* act, float* row,
                   const KernelArgs& args) {
  const Range share = split_range(p.pairs(), args.ith, args.nth);
  for (int64_t s = share.begin; s < share.end; ++s) {
    const int64_t pair = pairs[s];
    const int64_t t = pair / p.n_used;
    const int64_t i = pair % p.n_used;
    const uint8_t* src = x.row_ptr(i % p.n_b1, t);
    const float* dense = reinterpret_cast<const float*>(src);
    if (x.nb[0] != sizeof(float)) {
      gather_to_f32(Type::kF32, src, x.nb[0], row, p.k);
      dense = row;
    }
    uint8_t* out = act + static_cast<size_t>(s) * p.act_row;
    if (p.packed != nullptr) {
      p.packed->pack(dense, out, p.k);
    } else if (p.dk->act_type == Type::kF32) {
      std::memcpy(out, dense, static_cast<size_t>(p.k) * sizeof(float));
    } else {
      convert_activations(p.dk->act_type, dense, out, p.k);
    }
  }
}

// Chunk sizes as mul_mat picks them: at most 64 x 64, smaller weight-row spans when there are
// too few chunks for every thread to get several.
struct Chunking {
  int64_t size_m = 1, count_m = 1, size_n = 64;
};

Chunking make_chunking(const Plan& p, const int32_t* offsets, int nth) {
  constexpr int64_t kMaxChunk = 64;
  Chunking c;
  c.size_n = kMaxChunk;
  int64_t col_chunks = 0;
  for (int64_t e = 0; e < p.n_expert; ++e) {
    col_chunks += (offsets[e + 1] - offsets[e] + c.size_n - 1) / c.size_n;
  }
  const int64_t target = 4 * static_cast<int64_t>(nth);
  int64_t per = kMaxChunk;
  if (col_chunks * ((p.m + per - 1) / per) < target && col_chunks > 0) {
    per = (p.m * col_chunks + target - 1) / target;
    per = std::max<int64_t>(p.max_w, (per + p.max_w - 1) / p.max_w * p.max_w);
  }
  c.size_m = std::min(per, p.m);
  c.count_m = (p.m + c.size_m - 1) / c.size_m;
  return c;
}

}  // namespace

size_t mul_mat_id_work_size(const Tensor& dst, int nth) {
  const Plan p = make_plan(dst);
  return scratch_bytes(p.act_bytes, p.per_thread, nth);
}

Status mul_mat_id(const Tensor& dst, const KernelArgs& args) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  const Plan p = make_plan(dst);
  STRATA_RETURN_IF_ERROR(check_ids(ids, p.n_expert));

  uint8_t* act = aligned_scratch(args);
  uint8_t* local = thread_scratch(args, p.act_bytes, p.per_thread);
  auto* offsets = reinterpret_cast<int32_t*>(local);
  auto* pairs = reinterpret_cast<int32_t*>(local + p.off_pairs);
  auto* row = reinterpret_cast<float*>(local + p.off_row);
  auto* tile_out = reinterpret_cast<float*>(local + p.off_tile);
  uint8_t* panel = local + p.off_panel;

  group_pairs(ids, p, offsets, pairs);
  convert_pairs(x, p, pairs, act, row, args);
  args.barrier();

  const Chunking ch = make_chunking(p, offsets, args.nth);
  // Chunks are numbered expert by expert, activation-row chunk outer, weight-row chunk inner.
  int64_t total = 0;
  for (int64_t e = 0; e < p.n_expert; ++e) {
    total += (offsets[e + 1] - offsets[e] + ch.size_n - 1) / ch.size_n * ch.count_m;
  }
  const Range mine = split_range(total, args.ith, args.nth);
  const size_t w_row = w.nb[1];
  int64_t first = 0;  // number of the expert's first chunk
  for (int64_t e = 0; e < p.n_expert && first < mine.end; ++e) {
    const int64_t cnt = offsets[e + 1] - offsets[e];
    const int64_t chunks = (cnt + ch.size_n - 1) / ch.size_n * ch.count_m;
    const int64_t lo = std::max(mine.begin, first);
    const int64_t hi = std::min(mine.end, first + chunks);
    const uint8_t* w_expert = w.row_ptr(0, e);
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t local_c = c - first;
      const int64_t n0 = local_c / ch.count_m * ch.size_n;
      const int64_t m0 = local_c % ch.count_m * ch.size_m;
      const int64_t n1 = std::min(cnt, n0 + ch.size_n);
      const int64_t m1 = std::min(p.m, m0 + ch.size_m);
      // Enough rows for an expert (prefill) and the weight tile is rearranged once for all of
      // them, as mul_mat does; the outputs are the same bits either way.
      const bool use_panel =
          p.packed != nullptr && p.packed->pack_panel != nullptr && n1 - n0 > kPanelMinActRows;
      for (int64_t iw = m0; iw < m1; iw += p.max_w) {
        const int nw = static_cast<int>(std::min<int64_t>(p.max_w, m1 - iw));
        const uint8_t* wp = w_expert + static_cast<size_t>(iw) * w_row;
        DotTileFn tile = p.tile;
        if (use_panel) {
          p.packed->pack_panel(p.k, wp, w_row, nw, panel);
          wp = panel;
          tile = p.packed->panel_tile;
        }
        for (int64_t ia = n0; ia < n1; ia += p.max_a) {
          const int na = static_cast<int>(std::min<int64_t>(p.max_a, n1 - ia));
          const int64_t s0 = offsets[e] + ia;
          tile(p.k, wp, w_row, nw, act + static_cast<size_t>(s0) * p.act_row, p.act_row, na,
               tile_out, 1, nw);
          for (int a = 0; a < na; ++a) {
            const int64_t pair = pairs[s0 + a];
            auto* out =
                reinterpret_cast<float*>(dst.row_ptr(pair % p.n_used, pair / p.n_used)) + iw;
            std::memcpy(out, tile_out + a * nw, static_cast<size_t>(nw) * sizeof(float));
          }
        }
      }
    }
    first += chunks;
  }
  return {};
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
