// mul_mat: dst[m, n, i2, i3] = dot(src0 row (m, i2 / r2, i3 / r3), src1 row (n, i2, i3)).
//
// Two phases. First the activations (src1) are rounded to the weight type's dot type, once,
// rows split across threads, into the shared scratch. After a barrier each thread takes a
// contiguous range of output chunks (batch x weight rows x activation rows) and walks each
// chunk in tiles of a few weight rows by a few activation rows, so a weight row is read from
// memory once per chunk rather than once per activation row. Every output element is one
// tile-kernel dot product whose arithmetic does not depend on the tiling (see dot.h), hence
// results are bit-identical for any thread count.
//
// Weight types with a packed kernel (dot_packed.h) get their activations packed in that
// kernel's layout in the first phase instead; the walk is the same. Where the packed kernel
// also rearranges weight rows (a panel), prefill rearranges each weight tile of a chunk once
// and walks the chunk's activation tiles over it; decode reads the rows in place.
//
// Two kinds of work are skipped where the result cannot differ. With a mask (src[2]), a tile
// whose outputs it hides is written -inf and not computed, nor its panel packed: the causal
// future of a prompt's attention scores, about half of them. And where the tile kernel sums
// lanes of fused multiply-adds from zero (PackedDot::zero_tail_step), an activation tile whose
// rows end in zeros stops at its last nonzero step: a zero product leaves every lane's sum as
// it was. Attention's probabilities against V end in such zeros, the softmax of hidden scores.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/kernels/convert.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/dot_transposed.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/mul_mat_skips.h"
#include "cpu/kernels/work_shares.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Tensor;
using core::Type;

// At most this many activation rows count as decode: each weight row is used once per chunk,
// and the walk is bound by memory (the tile kernels prefetch the weights ahead of themselves:
// simd::prefetch_tile_ahead).
constexpr int64_t kStreamMaxActRows = 4;

// Decode under grouped-query attention: one query row per head, several heads per weight batch,
// taken as the activation rows of one batch (see mul_mat).
bool folds_heads(const Tensor& w, const Tensor& x) {
  return x.ne[2] > w.ne[2] && x.ne[1] == 1;
}

// The mask rows a call reads: one per activation row, or with folded heads the one token's.
int64_t mask_rows(const Tensor& dst) {
  return folds_heads(*dst.src[0], *dst.src[1]) ? 1 : dst.ne[1];
}

// A chunk's weight rows at most (see make_chunking).
constexpr int64_t kMaxChunk = 64;
// The most a chunk's panels take when they are walked together (Plan::panels_outer).
constexpr size_t kPanelsOuterBytes = 32 << 10;
// Panels of fewer rows than this (a pair of rows per register, the q5_k and q6_k kernels) are
// always walked together, as many of a chunk's as kNarrowPanelsBytes holds (see make_plan).
constexpr int kNarrowPanelRows = 16;
constexpr size_t kNarrowPanelsBytes = 256 << 10;

// Rows of a strided weight view gathered at once (a chunk's, at most).
constexpr int64_t kGatherRows = 64;

struct Plan {
  const DotKernels* dk = nullptr;
  const PackedDot* packed = nullptr;  ///< when set, activations are packed and its tile used
  int max_w = 1;
  int max_a = 1;
  DotTileFn tile = nullptr;
  DotTileFn cached_tile = nullptr;  ///< tile without prefetches (act_tiles_outer's walk)
  DotSlices slices;                 ///< act_tiles_outer's walk splits rows longer than this
  bool act_direct = false;          ///< f32 weights and dense src1 rows: use src1 in place
  bool gather_x = false;            ///< src1 rows are strided: gather them to dense f32 first
  bool gather_w = false;            ///< src0 rows are strided (a transposed view): gather per tile
  bool by_lanes = false;            ///< transposed float src0, few src1 rows: dot_transposed_rows
  bool act_tiles_outer = false;     ///< walk a chunk activation tile by activation tile
  bool panel = false;               ///< prefill reads weight tiles through packed->pack_panel
  bool panels_outer = false;        ///< ... every panel of a chunk at once, activation tiles outer
  int64_t max_chunk_rows = kMaxChunk;  ///< weight rows a chunk takes at most
  int64_t tail_step = 0;  ///< activation tiles may stop at a multiple of this past zeros
  size_t act_row = 0;     ///< bytes of one converted activation row
  size_t w_row = 0;       ///< bytes of one weight row
  size_t extents_at = 0;  ///< shared scratch: where each row's nonzero extent lies
  size_t spans_at = 0;    ///< shared scratch: where the mask rows' spans lie
  size_t act_bytes = 0;   ///< shared scratch: converted activation rows, extents, spans
  size_t per_thread = 0;  ///< each thread's own scratch
};

Plan make_plan(const Tensor& dst) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const int64_t k = x.ne[0];
  Plan p;
  p.dk = dot_kernels(w.type);
  p.gather_x = x.nb[0] != sizeof(float);
  p.gather_w = w.nb[0] != core::type_size(w.type);
  p.w_row = core::row_size(w.type, k);
  // Decode's attention reads V transposed; walking it in address order beats gathering it,
  // packed or not. The walk reads activation rows of the plain act_type.
  p.by_lanes = p.gather_w && x.ne[1] <= kStreamMaxActRows && w.nb[1] == core::type_size(w.type) &&
               dot_transposed_supported(w.type, k);
  p.packed = p.by_lanes ? nullptr : packed_dot(w.type, k);
  // Decode's attention scores: a GQA group's query rows against short f16 K rows.
  if (p.packed != nullptr && folds_heads(w, x) && !p.gather_w) {
    if (const PackedDot* cells = packed_dot_f16_cells(w.type, k)) p.packed = cells;
  }
  if (p.packed != nullptr) {
    p.max_w = p.packed->max_w;
    p.max_a = p.packed->max_a;
    p.tile = p.packed->tile;
    p.cached_tile = p.packed->cached_tile;
    p.act_row = p.packed->act_row_bytes(k);
    p.panel = p.packed->pack_panel != nullptr && !p.gather_w;
    p.act_tiles_outer = p.packed->act_tiles_outer && !p.panel;
    if (p.packed->zero_tail_step > 0 && k % p.packed->zero_tail_step == 0) {
      p.tail_step = p.packed->zero_tail_step;
    }
  } else {
    p.max_w = p.dk->max_w;
    p.max_a = p.dk->max_a;
    p.tile = p.dk->tile;
    p.cached_tile = p.dk->cached_tile;
    p.slices = p.dk->slices;
    p.act_direct = p.dk->act_type == Type::kF32 && !p.gather_x;
    p.act_tiles_outer = p.dk->act_tiles_outer;
    p.act_row = core::row_size(p.dk->act_type, k);
  }
  if (p.cached_tile == nullptr) p.cached_tile = p.tile;
  // Slices only where the walk is act_tiles_outer's and nothing is masked (the weights' GEMMs).
  const bool sliced = p.slices.fn != nullptr && p.act_tiles_outer && !p.gather_w &&
                      dst.src[2] == nullptr && k > p.slices.elements && k % p.slices.step == 0;
  if (!sliced) p.slices = {};
  p.act_bytes = p.act_direct ? 0 : p.act_row * static_cast<size_t>(x.nrows());
  if (p.tail_step > 0) {
    p.extents_at = align_up(p.act_bytes);
    p.act_bytes = p.extents_at + static_cast<size_t>(x.nrows()) * sizeof(int32_t);
  }
  if (dst.src[2] != nullptr) {
    p.spans_at = align_up(p.act_bytes);
    p.act_bytes = p.spans_at + static_cast<size_t>(mask_rows(dst)) * sizeof(MaskSpan);
  }
  if (p.gather_x) p.per_thread = static_cast<size_t>(k) * sizeof(float);
  if (p.panel) {
    // Panels of short rows (attention scores) all fit in L1 together: the chunk walks its
    // activation tiles over all of them, so each output row is written a run of lines at a
    // time rather than one line per row down a column, which missed the cache store by store.
    const size_t one = p.packed->panel_bytes(k);
    // A chunk's last panel may be partial (max_w need not divide the chunk's rows).
    const auto panels = [&](int64_t rows) {
      return static_cast<size_t>((rows + p.max_w - 1) / p.max_w);
    };
    size_t all = one * panels(kMaxChunk);
    p.panels_outer = all <= kPanelsOuterBytes;
    // A narrow panel serves so few rows that a chunk's activation rows (up to 512 of them, past
    // L2) would come from L3 again for each one, the two cores' reads sharing it; walked
    // activation tile by activation tile over all the chunk's panels, they come once per chunk.
    // MulMatPrefill on 2 Zen 5 threads, 2048 x 5632 and 5632 x 2048 by 512: q6_k 27 -> 22 and
    // 25 -> 20 ms, q5_k 30 -> 27 and 27 -> 24 ms. The chunk then takes as many rows as the
    // panels' budget holds: a quarter of a 1 MiB L2, half of a 512 KiB one (a 512 KiB budget
    // was a little faster on Zen 5, 21 and 20 ms in q6_k, and would fill a smaller core's L2).
    if (p.max_w < kNarrowPanelRows) {
      const auto fit = static_cast<int64_t>(std::max<size_t>(1, kNarrowPanelsBytes / one));
      p.max_chunk_rows = std::min<int64_t>(kMaxChunk, fit * p.max_w);
      all = one * panels(p.max_chunk_rows);
      p.panels_outer = true;
    }
    p.per_thread = std::max(p.per_thread, p.panels_outer ? all : one);
  }
  if (p.slices.fn != nullptr) {  // the lanes of one activation tile against a chunk's rows
    const auto tiles = static_cast<size_t>((kMaxChunk + p.max_w - 1) / p.max_w);
    p.per_thread = std::max(p.per_thread, tiles * static_cast<size_t>(p.max_w * p.max_a) * 64);
  }
  if (p.by_lanes) {
    p.per_thread = std::max(p.per_thread, dot_transposed_scratch(k, w.ne[1]) * sizeof(float));
  } else if (p.gather_w) {
    p.per_thread = std::max(p.per_thread, kGatherRows * core::row_size(w.type, k));
  }
  return p;
}

// Activation rows are converted in pieces of whole blocks (packed groups), each piece on
// its own, so fewer rows than threads (decode: one row) still spread over every thread.
// Blocks are independent, so the bytes do not depend on the split.
void convert_rows(const Tensor& x, const Plan& p, uint8_t* act, uint8_t* local,
                  const KernelArgs& args) {
  const int64_t k = x.ne[0];
  const Type act_type = p.dk->act_type;
  const int64_t unit = p.packed != nullptr ? p.packed->group : core::block_size(act_type);
  const int64_t units = k / unit;
  const int64_t nrows = x.nrows();
  const int64_t pieces = nrows >= args.nth ? 1 : std::min<int64_t>(units, args.nth);
  const auto out_bytes = [&](int64_t n) {
    return p.packed != nullptr ? p.packed->act_row_bytes(n) : core::row_size(act_type, n);
  };
  const Range items = split_range(nrows * pieces, args.ith, args.nth);
  for (int64_t item = items.begin; item < items.end; ++item) {
    const int64_t r = item / pieces;
    const int64_t piece = item % pieces;
    const int64_t e0 = units * piece / pieces * unit;
    const int64_t n = units * (piece + 1) / pieces * unit - e0;
    const RowIndex ix = row_index(x, r);
    const uint8_t* src = x.row_ptr(ix.i1, ix.i2, ix.i3) + static_cast<size_t>(e0) * x.nb[0];
    uint8_t* out = act + static_cast<size_t>(r) * p.act_row + out_bytes(e0);
    const float* dense = reinterpret_cast<const float*>(src);
    if (p.gather_x) {
      gather_to_f32(Type::kF32, src, x.nb[0], reinterpret_cast<float*>(local), n);
      dense = reinterpret_cast<const float*>(local);
    }
    if (p.tail_step > 0) {
      // Whole rows only; a row split across threads keeps its full length.
      auto* extents = reinterpret_cast<int32_t*>(act + p.extents_at);
      if (piece == 0) extents[r] = static_cast<int32_t>(pieces == 1 ? nonzero_extent(dense, n) : k);
    }
    if (p.packed != nullptr) {
      p.packed->pack(dense, out, n);
    } else if (act_type == Type::kF32) {
      std::memcpy(out, dense, static_cast<size_t>(n) * sizeof(float));
    } else {
      convert_activations(act_type, dense, out, n);
    }
  }
}

// Copies nw strided weight rows of k elements of TS bytes into dense rows. Element j of
// consecutive rows is read together, which is the cache-friendly order for a transposed view;
// the element size is a template argument so each copy is one load and one store.
template <size_t TS>
void gather_elements(const uint8_t* first, size_t nb0, size_t nb1, int64_t k, int nw, size_t row,
                     uint8_t* out) {
  for (int64_t j = 0; j < k; ++j) {
    const uint8_t* src = first + static_cast<size_t>(j) * nb0;
    for (int r = 0; r < nw; ++r) std::memcpy(out + r * row + j * TS, src + r * nb1, TS);
  }
}

void gather_weights(const Tensor& w, const uint8_t* first, int nw, uint8_t* out) {
  const size_t row = core::row_size(w.type, w.ne[0]);
  switch (core::type_size(w.type)) {
    case 2:
      return gather_elements<2>(first, w.nb[0], w.nb[1], w.ne[0], nw, row, out);
    case 4:
      return gather_elements<4>(first, w.nb[0], w.nb[1], w.ne[0], nw, row, out);
    default:
      break;
  }
  const size_t ts = core::type_size(w.type);
  for (int64_t j = 0; j < w.ne[0]; ++j) {
    for (int r = 0; r < nw; ++r) {
      std::memcpy(out + r * row + j * ts, first + r * w.nb[1] + j * w.nb[0], ts);
    }
  }
}

struct Chunking {
  int64_t size_m, size_n, count_m, count_n, batches;
};

// Enough chunks that every thread gets several (load balance), each at most 64 x 64 so its
// weight rows stay cached while it walks the activation rows. A panel serves up to 512
// activation rows: rearranging the weight tile costs about a tenth of its dot products
// against 64 rows (tinyllama Q4_0 pp512 321 -> 373 t/s on Zen 5, 2 threads), and the panel
// stays in L2 while the rows stream past.
//
// Without a panel, each weight tile walks the chunk's activation rows, which must stay in L2:
// at most kMaxActChunkBytes of them (a quarter of a 1 MiB L2). 64 rows of tinyllama's FFN down
// projection as f32 (k 5632) had taken 1.4 MiB and came from L3 for every tile: f16 pp512
// 137 -> 147 t/s on 2 Zen 5 cores. Walked activation tile by activation tile, the weights are
// what stays, and the bound does not apply (bf16 gained nothing from it). There the weight rows
// take at most kMaxWeightChunkBytes: with the activation tiles passing through L2 too, 64 rows of
// the FFN down projection (720 KiB in bf16) had not stayed (tinyllama BF16 pp512 on 2 Zen 5
// cores: ffn_out 0.97-0.99 -> 0.85 ms a token with 32 rows).
Chunking make_chunking(int64_t m, int64_t n, int64_t batches, const Plan& plan, int nth) {
  constexpr int64_t kMaxPanelChunk = 512;
  constexpr int64_t kMaxActChunkBytes = 256 << 10;
  constexpr int64_t kMaxWeightChunkBytes = 384 << 10;
  Chunking c;
  c.batches = batches;
  c.size_n = std::min(n, plan.panel ? kMaxPanelChunk : kMaxChunk);
  if (!plan.panel && !plan.act_tiles_outer && plan.act_row > 0) {
    const int64_t fit = kMaxActChunkBytes / static_cast<int64_t>(plan.act_row);
    c.size_n = std::min(c.size_n, std::max<int64_t>(1, fit / plan.max_a) * plan.max_a);
  }
  c.count_n = (n + c.size_n - 1) / c.size_n;
  const int64_t target = 4 * static_cast<int64_t>(nth);
  const int64_t other = c.batches * c.count_n;
  int64_t per = plan.max_chunk_rows;
  if (plan.act_tiles_outer && n > kStreamMaxActRows) {
    const int64_t fit = kMaxWeightChunkBytes / static_cast<int64_t>(plan.w_row);
    per = std::clamp<int64_t>(fit / plan.max_w * plan.max_w, plan.max_w, kMaxChunk);
  }
  if (other * ((m + per - 1) / per) < target) {
    per = (m * other + target - 1) / target;
    per = std::max<int64_t>(plan.max_w, (per + plan.max_w - 1) / plan.max_w * plan.max_w);
  }
  c.size_m = std::min(per, m);
  c.count_m = (m + c.size_m - 1) / c.size_m;
  return c;
}

// All m outputs of an activation row from one pass over the weights. Under grouped-query
// attention (one row per query head, r2 heads per weight batch) a pass serves up to
// kTransposedMaxRows heads; the heads of a batch are split into pieces only as far as keeps
// every thread busy.
void mul_mat_by_lanes(const Tensor& dst, const Plan& p, const uint8_t* act, float* lanes,
                      const KernelArgs& args) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const int64_t r2 = x.ne[2] / w.ne[2];
  const int64_t r3 = x.ne[3] / w.ne[3];
  const bool fold = folds_heads(w, x);
  const int64_t groups = fold ? w.ne[2] * x.ne[3] : x.nrows();
  const int64_t pieces = fold ? std::min<int64_t>(r2, (args.nth + groups - 1) / groups) : 1;
  const int64_t ldo = static_cast<int64_t>(dst.nb[0] / sizeof(float));
  const Range items = split_range(groups * pieces, args.ith, args.nth);
  for (int64_t item = items.begin; item < items.end; ++item) {
    const int64_t group = item / pieces, piece = item % pieces;
    RowIndex first{};  // the piece's first activation row
    int64_t rows = 1;
    if (fold) {
      const int64_t lo = r2 * piece / pieces;
      first = {0, group % w.ne[2] * r2 + lo, group / w.ne[2]};
      rows = r2 * (piece + 1) / pieces - lo;
    } else {
      first = row_index(x, group);
    }
    // Converted rows lie in (i3, i2, i1) order: a fold's rows are consecutive there too.
    const size_t act_index =
        static_cast<size_t>((first.i3 * x.ne[2] + first.i2) * x.ne[1] + first.i1);
    const uint8_t* w_batch = w.row_ptr(0, first.i2 / r2, first.i3 / r3);
    for (int64_t r = 0; r < rows; r += kTransposedMaxRows) {
      const int n = static_cast<int>(std::min<int64_t>(kTransposedMaxRows, rows - r));
      const uint8_t* a = p.act_direct ? x.row_ptr(first.i1, first.i2 + r, first.i3)
                                      : act + (act_index + static_cast<size_t>(r)) * p.act_row;
      const size_t lda = p.act_direct ? x.nb[2] : p.act_row;
      auto* out = reinterpret_cast<float*>(dst.row_ptr(first.i1, first.i2 + r, first.i3));
      const auto ldo_row = static_cast<int64_t>(dst.nb[2] / sizeof(float));
      dot_transposed_rows(w.type, x.ne[0], w.ne[1], w_batch, w.nb[0], a, lda, n, out, ldo, ldo_row,
                          lanes);
      if (const Tensor* mask = dst.src[2]) {  // computed whole, then hidden
        const auto* hide = reinterpret_cast<const float*>(mask->row_ptr(first.i1));
        for (int j = 0; j < n; ++j) {
          for (int64_t m = 0; m < w.ne[1]; ++m) {
            if (hide[m] == -INFINITY) out[j * ldo_row + m * ldo] = -INFINITY;
          }
        }
      }
    }
  }
}

}  // namespace

size_t mul_mat_work_size(const Tensor& dst, int nth) {
  const Plan p = make_plan(dst);
  return scratch_bytes(p.act_bytes, p.per_thread, nth);
}

bool mul_mat_shares_input(const Tensor& first, const Tensor& next) {
  if (first.op != core::Op::kMulMat || next.op != core::Op::kMulMat) return false;
  if (first.src[1] != next.src[1] || first.src[2] != nullptr || next.src[2] != nullptr) {
    return false;
  }
  const Tensor& x = *first.src[1];
  if (folds_heads(*first.src[0], x) || folds_heads(*next.src[0], x)) return false;
  const Plan a = make_plan(first);
  const Plan b = make_plan(next);
  if (a.by_lanes || b.by_lanes || a.gather_w || b.gather_w) return false;
  // Each participant's own scratch lies after the shared part at its ith multiple of
  // per_thread: with other sizes, one's area for one node would overlap another's for the next.
  if (a.per_thread != b.per_thread || a.act_bytes != b.act_bytes) return false;
  if (a.act_direct || b.act_direct) return a.act_direct == b.act_direct;  // read in place
  const auto pack = [](const Plan& p) { return p.packed != nullptr ? p.packed->pack : nullptr; };
  return pack(a) == pack(b) && (a.packed != nullptr || a.dk->act_type == b.dk->act_type) &&
         a.act_row == b.act_row && a.tail_step == b.tail_step && a.gather_x == b.gather_x;
}

void mul_mat(const Tensor& dst, const KernelArgs& args) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Plan p = make_plan(dst);
  uint8_t* act = aligned_scratch(args);
  uint8_t* local = thread_scratch(args, p.act_bytes, p.per_thread);

  const Tensor* mask = dst.src[2];
  const int64_t k = x.ne[0];
  const int64_t r2 = x.ne[2] / w.ne[2];
  const int64_t r3 = x.ne[3] / w.ne[3];
  // Decode under grouped-query attention: one query row per head, r2 heads reading each K
  // head. Taken as the activation rows of one weight batch, they share every pass over its
  // rows instead of each reading the head on its own. Every output is still one dot product.
  const bool fold = folds_heads(w, x);
  const int64_t rows = fold ? r2 : dst.ne[1];
  const int64_t batch_dim = fold ? w.ne[2] : dst.ne[2];
  const Chunking ch = make_chunking(dst.ne[0], rows, batch_dim * dst.ne[3], p, args.nth);
  const int64_t per_batch = ch.count_m * ch.count_n;
  const int64_t n_chunks = ch.batches * per_batch;
  // The chunks are dealt in shares that a thread done with its own takes from (work_shares.h),
  // where a barrier follows the shares' publication anyway; not for gathered rows, which a
  // thread reuses across its consecutive chunks. A chunk's outputs are the same whoever
  // computes it.
  // With input_ready the conversion is done and the shares were empty at the start: a thread
  // that looks at another's share before its owner publishes it finds nothing to take.
  const bool converts = !p.act_direct && !args.input_ready;
  const bool prepares = converts || mask != nullptr;  // then a barrier follows
  const bool shared = (prepares || args.input_ready) && !p.by_lanes && !p.gather_w &&
                      has_work_shares(args, n_chunks);
  if (shared) publish_share(args, n_chunks);
  if (prepares) {
    if (converts) convert_rows(x, p, act, local, args);
    if (mask != nullptr) {
      auto* spans = reinterpret_cast<MaskSpan*>(act + p.spans_at);
      const Range mine = split_range(mask_rows(dst), args.ith, args.nth);
      for (int64_t r = mine.begin; r < mine.end; ++r) {
        spans[r] = scan_mask_row(reinterpret_cast<const float*>(mask->row_ptr(r)), dst.ne[0]);
      }
    }
    args.barrier();
  }

  if (p.by_lanes) {
    mul_mat_by_lanes(dst, p, act, reinterpret_cast<float*>(local), args);
    return;
  }
  const Range mine = split_range(n_chunks, args.ith, args.nth);
  int64_t next_mine = mine.begin;
  const auto next_chunk = [&]() -> int64_t {
    if (shared) return claim_item(args);
    return next_mine < mine.end ? next_mine++ : -1;
  };
  const int64_t ldo_w = static_cast<int64_t>(dst.nb[0] / sizeof(float));
  const int64_t ldo_a = static_cast<int64_t>(dst.nb[fold ? 2 : 1] / sizeof(float));
  const size_t x_row = x.nb[fold ? 2 : 1];

  // Where the batches lie side by side within each weight row (attention's K heads in one
  // cache row), a thread takes whole rows: every batch of a range of rows before the next
  // range, so memory sees the rows read densely instead of a head's share of each. Decode only
  // (a row per head): a prompt reads each row many times over from cache, and its masked
  // scores would leave the threads given the later rows (the causal future) little to do.
  const bool batches_inner =
      w.nb[2] < w.nb[1] && ch.batches > 1 && (fold || rows <= kStreamMaxActRows);
  // The rows gathered into `local` last (gather_w).
  const uint8_t* gathered_from = nullptr;
  int gathered_rows = 0;
  const TileMask hides{mask, reinterpret_cast<const MaskSpan*>(act + p.spans_at), fold};
  const bool trim = p.tail_step > 0 && x.nrows() >= args.nth;
  const auto* extents = reinterpret_cast<const int32_t*>(act + p.extents_at);
  // The tile's k: past the last nonzero step of its activation rows when it may stop there
  // (only packed activations carry extents, so never for rows read in place).
  const auto tile_k = [&](size_t first_row, int na) {
    if (!trim) return k;
    int64_t e = 1;
    for (int j = 0; j < na; ++j) e = std::max<int64_t>(e, extents[first_row + j]);
    return std::min(k, (e + p.tail_step - 1) / p.tail_step * p.tail_step);
  };
  // One tile, unless the mask hides all of it; the outputs it hides are -inf either way.
  // `ready` runs before the first tile that computes (a panel packed on demand).
  const auto run_tile = [&](DotTileFn tile, int64_t kt, const uint8_t* wp, size_t ldw, int64_t iw,
                            int nw, const uint8_t* ap, size_t lda, int64_t ia, int na, float* out,
                            const auto& ready) {
    uint64_t bits[64];
    const int hidden = mask != nullptr ? hides.hidden(iw, nw, ia, na, bits) : 0;
    if (hidden < nw * na) {
      ready();
      tile(kt, wp, ldw, nw, ap, lda, na, out, ldo_w, ldo_a);
    }
    if (hidden > 0) TileMask::apply(bits, nw, na, out, ldo_w, ldo_a);
  };
  const auto nothing = [] {};
  for (int64_t c = next_chunk(); c >= 0; c = next_chunk()) {
    const int64_t batch = batches_inner ? c % ch.batches : c / per_batch;
    const int64_t within = batches_inner ? c / ch.batches : c % per_batch;
    // The batch of the chunk's first activation row (with fold, rows run over batches).
    const int64_t i2 = batch % batch_dim * (fold ? r2 : 1);
    const int64_t i3 = batch / batch_dim;
    const int64_t m0 = within / ch.count_n * ch.size_m;
    const int64_t n0 = within % ch.count_n * ch.size_n;
    const int64_t m1 = std::min(dst.ne[0], m0 + ch.size_m);
    const int64_t n1 = std::min(rows, n0 + ch.size_n);
    const uint8_t* w_batch = w.row_ptr(0, i2 / r2, i3 / r3);
    const size_t act_batch = static_cast<size_t>((i3 * x.ne[2] + i2) * x.ne[1]);
    const bool stream_w = !p.gather_w && n1 - n0 <= kStreamMaxActRows;

    if (p.panels_outer && !stream_w) {
      // Each panel is packed before the first tile that computes with it.
      const size_t panel_bytes = p.packed->panel_bytes(k);
      uint64_t packed = 0;
      for (int64_t ia = n0; ia < n1; ia += p.max_a) {
        const int na = static_cast<int>(std::min<int64_t>(p.max_a, n1 - ia));
        const uint8_t* ap = act + (act_batch + static_cast<size_t>(ia)) * p.act_row;
        // The cells each row's mask hides outside its span are written here, a run at a time;
        // only panels within the rows' spans go through the tiles.
        int64_t seen_lo = m0, seen_hi = m1;
        if (mask != nullptr && ldo_w == 1) {
          seen_lo = m1;
          seen_hi = m0;
          for (int j = 0; j < na; ++j) {
            const MaskSpan& sp = hides.spans[fold ? 0 : ia + j];
            const int64_t lo = std::clamp<int64_t>(sp.lo, m0, m1);
            const int64_t hi = std::clamp<int64_t>(sp.hi, lo, m1);
            auto* row = reinterpret_cast<float*>(dst.row_ptr(0, i2, i3)) + (ia + j) * ldo_a;
            std::fill(row + m0, row + lo, -INFINITY);
            std::fill(row + hi, row + m1, -INFINITY);
            seen_lo = std::min(seen_lo, lo);
            seen_hi = std::max(seen_hi, hi);
          }
        }
        for (int64_t iw = m0; iw < m1; iw += p.max_w) {
          if (iw + p.max_w <= seen_lo || iw >= seen_hi) continue;
          const int nw = static_cast<int>(std::min<int64_t>(p.max_w, m1 - iw));
          const auto panel = static_cast<size_t>((iw - m0) / p.max_w);
          uint8_t* wp = local + panel * panel_bytes;
          auto* out =
              reinterpret_cast<float*>(dst.row_ptr(0, i2, i3) + iw * dst.nb[0]) + ia * ldo_a;
          run_tile(p.packed->panel_tile, k, wp, 0, iw, nw, ap, p.act_row, ia, na, out, [&] {
            if ((packed >> panel) & 1) return;
            p.packed->pack_panel(k, w_batch + iw * w.nb[1], w.nb[1], nw, wp);
            packed |= uint64_t{1} << panel;
          });
        }
      }
      continue;
    }
    if (p.act_tiles_outer && !stream_w && !p.gather_w) {
      // Each activation tile stays in L1 while the chunk's weight rows stream past it from L2.
      for (int64_t ia = n0; ia < n1; ia += p.max_a) {
        const int na = static_cast<int>(std::min<int64_t>(p.max_a, n1 - ia));
        const uint8_t* ap = p.act_direct ? x.row_ptr(0, i2, i3) + ia * x_row
                                         : act + (act_batch + static_cast<size_t>(ia)) * p.act_row;
        const size_t lda = p.act_direct ? x_row : p.act_row;
        const int64_t kt = tile_k(act_batch + static_cast<size_t>(ia), na);
        if (p.slices.fn != nullptr && kt > p.slices.elements) {
          // Slice by slice: each slice of the activation tile stays in L1 while the chunk's
          // rows pass, their lanes waiting in `local` (no mask: every output is computed).
          auto* lanes = reinterpret_cast<float*>(local);
          const size_t tile_lanes = static_cast<size_t>(p.max_w * p.max_a) * 16;
          for (int64_t k0 = 0; k0 < kt; k0 += p.slices.elements) {
            const int64_t k1 = std::min(kt, k0 + p.slices.elements);
            for (int64_t iw = m0; iw < m1; iw += p.max_w) {
              const int nw = static_cast<int>(std::min<int64_t>(p.max_w, m1 - iw));
              auto* out =
                  reinterpret_cast<float*>(dst.row_ptr(0, i2, i3) + iw * dst.nb[0]) + ia * ldo_a;
              p.slices.fn(kt, k0, k1, w_batch + iw * w.nb[1], w.nb[1], nw, ap, lda, na,
                          lanes + static_cast<size_t>((iw - m0) / p.max_w) * tile_lanes, out, ldo_w,
                          ldo_a);
            }
          }
          continue;
        }
        for (int64_t iw = m0; iw < m1; iw += p.max_w) {
          const int nw = static_cast<int>(std::min<int64_t>(p.max_w, m1 - iw));
          auto* out =
              reinterpret_cast<float*>(dst.row_ptr(0, i2, i3) + iw * dst.nb[0]) + ia * ldo_a;
          run_tile(p.cached_tile, kt, w_batch + iw * w.nb[1], w.nb[1], iw, nw, ap, lda, ia, na, out,
                   nothing);
        }
      }
      continue;
    }
    for (int64_t iw = m0; iw < m1; iw += p.max_w) {
      const int nw = static_cast<int>(std::min<int64_t>(p.max_w, m1 - iw));
      const uint8_t* wp = w_batch + iw * w.nb[1];
      size_t ldw = w.nb[1];
      DotTileFn tile = p.tile;
      if (p.gather_w) {
        // Strided rows (prefill's V through its transposed view) are gathered kGatherRows at a
        // time, once for every activation tile of the chunk and for the next chunks of the
        // same rows: gathering each tile again for each chunk had cost more than the products.
        const int64_t block = (iw - m0) / kGatherRows * kGatherRows + m0;
        const uint8_t* from = w_batch + block * w.nb[1];
        const int n_gather = static_cast<int>(std::min<int64_t>(kGatherRows, m1 - block));
        if (from != gathered_from || n_gather != gathered_rows) {
          gather_weights(w, from, n_gather, local);
          gathered_from = from;
          gathered_rows = n_gather;
        }
        wp = local + static_cast<size_t>(iw - block) * p.w_row;
        ldw = p.w_row;
      }
      // The panel is packed before the first tile that computes: none when the mask hides
      // every output of these weight rows in the chunk.
      const bool by_panel = p.panel && !stream_w;
      bool packed = !by_panel;
      const uint8_t* const in_place = wp;
      const auto pack = [&] {
        if (packed) return;
        p.packed->pack_panel(k, in_place, w.nb[1], nw, local);
        packed = true;
      };
      if (by_panel) {
        wp = local;
        tile = p.packed->panel_tile;
      }
      for (int64_t ia = n0; ia < n1; ia += p.max_a) {
        const int na = static_cast<int>(std::min<int64_t>(p.max_a, n1 - ia));
        // Converted rows lie in (i3, i2, i1) order, so a fold's rows are consecutive too.
        const uint8_t* ap = p.act_direct ? x.row_ptr(0, i2, i3) + ia * x_row
                                         : act + (act_batch + static_cast<size_t>(ia)) * p.act_row;
        const size_t lda = p.act_direct ? x_row : p.act_row;
        auto* out = reinterpret_cast<float*>(dst.row_ptr(0, i2, i3) + iw * dst.nb[0]) + ia * ldo_a;
        // A panel holds every element of its rows: it is read whole.
        const int64_t kt = by_panel ? k : tile_k(act_batch + static_cast<size_t>(ia), na);
        run_tile(tile, kt, wp, ldw, iw, nw, ap, lda, ia, na, out, pack);
      }
    }
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
