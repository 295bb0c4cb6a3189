// flash_attn: softmax(scale * q k^T + mask) v in one pass over the KV cells with an online
// softmax, per query row (one token of one head); no [n_kv, n_tokens] score matrix is stored.
//
// Work items are groups of up to kMaxRows query rows that read the same KV head: the heads of a
// GQA group and/or consecutive tokens, so each K and V row is loaded and converted once for all
// of them. Items are dealt to threads round-robin (causal prefill rows differ in length). One
// token's item takes several KV heads (a span) walked side by side, block by block, so a thread
// reads a contiguous part of each cache row rather than one head's 128 bytes a row apart.
//
// Every row's arithmetic is independent of its group, so the grouping (chosen by thread count)
// changes no bit: a row rounds its query once to k's dot type and walks the cells in blocks of
// kBlock anchored at cell 0. Per block, its scores come from a tile kernel whose per-pair result
// is independent of the tile shape (mul_mat's, or for f16 keys with AVX-512 one that sums each
// score in element order, one multiply-add after another), then * scale + mask in f32 as
// soft_max computes them (with a softcap: cap * tanhf(s * (scale / cap)) + mask, as ggml); cells
// its mask hides (-inf) get no score. If the block's maximum exceeds the row's running maximum m,
// the row's f32 accumulator and running sum l (double) are scaled by e^(m_old - m_new). Then p_j =
// e^(s_j - m), and every cell with p_j != 0 adds p_j to l and p_j * v_j to the accumulator, v_j
// converted to f32 once per block and group. Cells hidden from every row of a group are never
// read, so decode costs O(visible cells) and hidden padding changes no bit.
//
// A row's visible blocks (those where its mask shows a cell) are taken in segments of
// kSegmentBlocks: each segment starts from an empty state, and the segments' states are folded
// into the row's total in order (fold). Finally out = acc / l of the total (zeros when the mask
// hides every cell). The segments are counted in the row's own visible blocks, so they are the
// same whatever hidden cells lie between (another sequence's pages) and however the tokens are
// split into calls. One token's segments are independent work: decode deals them to the threads
// (flash-decoding), each reading a contiguous stretch of the cache for every KV head, then folds
// them in order, the same bits as one walk.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/kernels/convert.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/flash_attn_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/work_shares.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Tensor;
using core::Type;

using flash::accumulate_rows;
using flash::kBlock;
using flash::kMaxRows;
using flash::reads_f16_rows;
using flash::v_row;

constexpr int kMaxSpan = 8;  ///< KV heads per work item
/// Visible blocks per segment. Fixed, not chosen by thread count: the segments fix the bits.
/// 512 cells: a decode at a depth of 4096 gives 8 segments. Each segment costs a start from an
/// empty state and a fold; at 8 blocks decode at that depth took about 10% longer (one layer in
/// L3, 2 Zen 5 threads), at 32 no less.
constexpr int64_t kSegmentBlocks = 16;

int64_t n_segments(int64_t visible_blocks) {
  return (visible_blocks + kSegmentBlocks - 1) / kSegmentBlocks;
}

// How the (token, head) rows are grouped into items, and each thread's scratch layout.
struct Plan {
  const DotKernels* dk = nullptr;
  /// F16 keys: the kernel for many short rows (dot_cells_f16.cpp), whose queries are rounded to
  /// f16 once and held as f32, 32 cells at a time, each score one chain of multiply-adds.
  const PackedDot* cells = nullptr;
  DotTileFn tile = nullptr;
  int max_w = 1, max_a = 1;
  int64_t hd = 0, n_tokens = 0, n_head_kv = 0, group = 0;
  int64_t heads_per_item = 1, tokens_per_item = 1;
  /// KV heads an item walks side by side, block by block (decode): a thread then reads a
  /// contiguous span of each cache row instead of one head's part of it.
  int64_t kv_per_item = 1;
  /// One token: the most KV heads a segment's item walks side by side (a divisor of n_head_kv).
  int64_t segment_span = 1;
  size_t q_row = 0;  ///< bytes of one query row in k's dot type
  size_t off_q = 0, off_qc = 0, off_acc = 0, off_tot = 0, off_s = 0, off_idx = 0, off_v = 0;
  size_t off_blocks = 0, total = 0;
  /// One token: the segments' states, shared [segment][query head]: acc [hd], m, l.
  size_t off_seg_m = 0, off_seg_l = 0, shared = 0;

  int64_t n_blocks(int64_t n_kv) const { return (n_kv + kBlock - 1) / kBlock; }

  int64_t head_chunks() const { return (group + heads_per_item - 1) / heads_per_item; }
  int64_t token_blocks() const { return (n_tokens + tokens_per_item - 1) / tokens_per_item; }
  int64_t kv_spans() const { return n_head_kv / kv_per_item; }
  int64_t items() const { return token_blocks() * kv_spans() * head_chunks(); }
};

// Rows as large as kMaxRows allows, shrunk until the threads are dealt enough items.
Plan make_plan(const Tensor& dst, int nth) {
  const Tensor& q = *dst.src[0];
  const Tensor& k = *dst.src[1];
  Plan p;
  p.dk = dot_kernels(k.type);  // null only for nodes check_node rejects
  p.hd = q.ne[0];
  p.n_tokens = q.ne[1];
  p.n_head_kv = k.ne[2];
  p.group = q.ne[2] / k.ne[2];
  p.heads_per_item = std::min<int64_t>(p.group, kMaxRows);
  p.tokens_per_item = std::max<int64_t>(1, kMaxRows / p.heads_per_item);
  // A prompt's rows differ in length (causal), so it wants several items per thread; one token's
  // rows are alike, and every split reads the KV head once more, so it stops at an even deal.
  const auto enough = [&p, nth] {
    const int64_t items = p.items(), threads = nth;
    return items >= 4 * threads || (p.n_tokens == 1 && items % threads == 0);
  };
  while (!enough()) {
    if (p.tokens_per_item > 1 && p.n_tokens > 1) {
      p.tokens_per_item /= 2;
    } else if (p.heads_per_item > 1) {
      p.heads_per_item = (p.heads_per_item + 1) / 2;
    } else {
      break;
    }
  }
  // One token's items, each a whole GQA group: the KV heads dealt evenly, a span per thread.
  if (p.n_tokens == 1 && p.heads_per_item == p.group && p.items() % nth == 0) {
    const int64_t per = p.n_head_kv / nth;
    for (int64_t d = std::min<int64_t>(per, kMaxSpan); d > 1; --d) {
      if (p.n_head_kv % d == 0 && (p.n_head_kv / d) % nth == 0) {
        p.kv_per_item = d;
        break;
      }
    }
  }
  if (p.n_tokens == 1) {
    for (int64_t d = std::min<int64_t>(p.n_head_kv, kMaxSpan); d >= 1; --d) {
      if (p.n_head_kv % d == 0) {
        p.segment_span = d;
        break;
      }
    }
  }
  const auto floats = [](int64_t n) { return align_up(static_cast<size_t>(n) * sizeof(float)); };
  if (p.dk != nullptr) {
    p.cells = packed_dot_f16_chained(k.type, p.hd);
    p.tile = p.cells != nullptr ? p.cells->tile : p.dk->tile;
    p.max_w = p.cells != nullptr ? p.cells->max_w : p.dk->max_w;
    p.max_a = p.cells != nullptr ? p.cells->max_a : p.dk->max_a;
  }
  p.q_row = p.cells != nullptr
                ? p.cells->act_row_bytes(p.hd)
                : core::row_size(p.dk != nullptr ? p.dk->act_type : Type::kF32, p.hd);
  const int64_t span = std::max(p.kv_per_item, p.segment_span);
  const int64_t blocks = p.n_tokens == 1 ? p.n_blocks(k.ne[1]) : 0;
  p.off_qc = p.off_q + floats(p.hd);
  p.off_acc = p.off_qc + align_up(span * kMaxRows * p.q_row);
  p.off_tot = p.off_acc + floats(span * kMaxRows * p.hd);
  p.off_s = p.off_tot + floats(span * kMaxRows * p.hd);
  p.off_idx = p.off_s + floats(span * kMaxRows * kBlock);
  p.off_v = p.off_idx + align_up(span * kBlock * sizeof(int32_t));
  p.off_blocks = p.off_v + floats(kBlock * p.hd);
  p.total = p.off_blocks + align_up(blocks * sizeof(int32_t));
  if (blocks > 0) {
    const int64_t states = n_segments(blocks) * q.ne[2];
    p.off_seg_m = floats(states * p.hd);
    p.off_seg_l = p.off_seg_m + floats(states);
    p.shared = p.off_seg_l + align_up(static_cast<size_t>(states) * sizeof(double));
  }
  return p;
}

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// p[i] = e^(p[i] - max) for i < n; the tail goes through the same vector exp, so a cell's
// probability does not depend on where in the block it sits.
void exp_block(float* p, int64_t n, float max) {
  int64_t i = 0;
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  // Sixteen lanes: simd::exp's same operations per lane, half the instructions.
  const __m512 vmax = _mm512_set1_ps(max);
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(p + i, simd::exp(_mm512_sub_ps(_mm512_loadu_ps(p + i), vmax)));
  }
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 x = _mm512_mask_loadu_ps(vmax, tail, p + i);
    _mm512_mask_storeu_ps(p + i, tail, simd::exp(_mm512_sub_ps(x, vmax)));
  }
#elif defined(STRATA_CPU_AVX2)
  const __m256 vmax = _mm256_set1_ps(max);
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(p + i, simd::exp(_mm256_sub_ps(_mm256_loadu_ps(p + i), vmax)));
  }
  if (i < n) {
    alignas(32) float buf[8];
    for (int64_t j = 0; j < 8; ++j) buf[j] = i + j < n ? p[i + j] : max;
    _mm256_store_ps(buf, simd::exp(_mm256_sub_ps(_mm256_load_ps(buf), vmax)));
    for (int64_t j = i; j < n; ++j) p[j] = buf[j - i];
  }
#else
  for (; i < n; ++i) p[i] = std::exp(p[i] - max);
#endif
}

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
// A full block's scores s[i] * scale + mask[i] (-inf where the mask is), in place; returns their
// maxima lane by lane (none a NaN). mask may be null.
__m512 scores_dense_lanes(float* s, const float* mask, float scale) {
  static_assert(kBlock % 16 == 0);
  const __m512 vscale = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
  __m512 vmax = ninf;
  for (int64_t i = 0; i < kBlock; i += 16) {
    __m512 x = _mm512_mul_ps(_mm512_loadu_ps(s + i), vscale);
    if (mask != nullptr) {
      const __m512 m = _mm512_loadu_ps(mask + i);
      x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(m, ninf, _CMP_EQ_OQ), _mm512_add_ps(x, m), ninf);
    }
    _mm512_storeu_ps(s + i, x);
    vmax = _mm512_maskz_max_ps(0xffff, x, vmax);  // a NaN score leaves the maximum as std::max does
  }
  return vmax;
}

// out[r] = the largest of v[r]'s 16 lanes, for 8 registers at once: halves, then quarters, then
// pairs of lanes of two rows side by side, so that 15 shuffles and 8 maxima serve all 8 rows
// (one row at a time, its lanes stored and compared one by one, had taken a tenth of a decode
// block's bookkeeping). The maximum does not depend on the order of the comparisons: no lane is
// a NaN, and where +0 and -0 tie, either one gives the same e^(s - max) after it.
void lane_maxima8(const __m512 v[8], float* out) {
  const auto max = [](__m512 a, __m512 b) { return _mm512_maskz_max_ps(0xffff, a, b); };
  __m512 w[4], x[2];
  for (int j = 0; j < 4; ++j) {  // lanes 0-7: row 2j, 8-15: row 2j + 1
    w[j] = max(_mm512_maskz_shuffle_f32x4(0xffff, v[2 * j], v[2 * j + 1], 0x44),
               _mm512_maskz_shuffle_f32x4(0xffff, v[2 * j], v[2 * j + 1], 0xee));
  }
  for (int j = 0; j < 2; ++j) {  // 128-bit lane q: row 4j + q
    x[j] = max(_mm512_maskz_shuffle_f32x4(0xffff, w[2 * j], w[2 * j + 1], 0x88),
               _mm512_maskz_shuffle_f32x4(0xffff, w[2 * j], w[2 * j + 1], 0xdd));
  }
  // 128-bit lane q: elements 0, 1 row q; 2, 3 row 4 + q; then each pair's two compared.
  const __m512 y = max(_mm512_maskz_shuffle_ps(0xffff, x[0], x[1], 0x44),
                       _mm512_maskz_shuffle_ps(0xffff, x[0], x[1], 0xee));
  const __m512 z = max(y, _mm512_maskz_permute_ps(0xffff, y, 0xb1));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, z);
  for (int q = 0; q < 4; ++q) {
    out[q] = lanes[4 * q];
    out[4 + q] = lanes[4 * q + 2];
  }
}
#else
// A full block's scores s[i] * scale + mask[i] (-inf where the mask is), in place; returns their
// maximum. mask may be null.
float scores_dense(float* s, const float* mask, float scale) {
#if defined(STRATA_CPU_AVX2)
  const __m256 vscale = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
  __m256 vmax = ninf;
  for (int64_t i = 0; i < kBlock; i += 8) {
    __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + i), vscale);
    if (mask != nullptr) {
      const __m256 m = _mm256_loadu_ps(mask + i);
      x = _mm256_blendv_ps(_mm256_add_ps(x, m), ninf, _mm256_cmp_ps(m, ninf, _CMP_EQ_OQ));
    }
    _mm256_storeu_ps(s + i, x);
    vmax = _mm256_max_ps(x, vmax);  // a NaN score leaves the maximum as std::max does
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  return *std::max_element(lanes, lanes + 8);
#else
  float bmax = -INFINITY;
  for (int64_t i = 0; i < kBlock; ++i) {
    float x = s[i] * scale;
    if (mask != nullptr) x = mask[i] == -INFINITY ? -INFINITY : x + mask[i];
    s[i] = x;
    bmax = std::max(bmax, x);
  }
  return bmax;
#endif
}
#endif

// Each row's full block of scores (rows kBlock apart in s) scaled and masked in place, as
// scores_dense does, and its maximum in bmax[r]; mask rows may be null.
void dense_block_maxima(float* s, const float* const* mask, int rows, float scale, float* bmax) {
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  __m512 v[kMaxRows];
  for (int r = 0; r < kMaxRows; ++r) {
    v[r] =
        r < rows ? scores_dense_lanes(s + r * kBlock, mask[r], scale) : _mm512_set1_ps(-INFINITY);
  }
  static_assert(kMaxRows == 8);
  lane_maxima8(v, bmax);
#else
  for (int r = 0; r < rows; ++r) bmax[r] = scores_dense(s + r * kBlock, mask[r], scale);
#endif
}

// One work item: `n` query rows reading KV head `kv_head`.
struct Rows {
  int n = 0;
  int64_t kv_head = 0;
  int64_t token[kMaxRows] = {};
  int64_t head[kMaxRows] = {};
};

// Cells of [c0, c0 + nc) visible to at least one row; returns how many. Bit r of *sees is set
// when row r sees one of them.
int64_t visible_cells(const Tensor* mask, const Rows& rows, int64_t c0, int64_t nc, int32_t* idx,
                      uint32_t* sees) {
  const uint32_t all_rows = (1u << rows.n) - 1;
  if (mask == nullptr) {
    for (int64_t j = 0; j < nc; ++j) idx[j] = static_cast<int32_t>(j);
    *sees = nc > 0 ? all_rows : 0;
    return nc;
  }
  *sees = 0;
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  // A whole block of a dense mask: each distinct token's row compared 16 cells at a time (a
  // decode item's rows are one token's), then the visible cells' offsets from the bits.
  if (nc == kBlock && mask->nb[0] == sizeof(float)) {
    static_assert(kBlock == 32);
    uint32_t seen = 0, token_bits = 0;
    const __m512 hidden = _mm512_set1_ps(-INFINITY);
    for (int r = 0; r < rows.n; ++r) {
      if (r == 0 || rows.token[r] != rows.token[r - 1]) {
        const float* m = reinterpret_cast<const float*>(mask->row_ptr(rows.token[r])) + c0;
        // Not equal or unordered: a NaN in the mask is visible, as != says.
        const uint32_t lo = _mm512_cmp_ps_mask(_mm512_loadu_ps(m), hidden, _CMP_NEQ_UQ);
        const uint32_t hi = _mm512_cmp_ps_mask(_mm512_loadu_ps(m + 16), hidden, _CMP_NEQ_UQ);
        token_bits = lo | hi << 16;
        seen |= token_bits;
      }
      if (token_bits != 0) *sees |= 1u << r;
    }
    int64_t n = 0;
    for (uint32_t bits = seen; bits != 0; bits &= bits - 1) {
      idx[n++] = static_cast<int32_t>(__builtin_ctz(bits));
    }
    return n;
  }
#endif
  int64_t n = 0;
  for (int64_t j = 0; j < nc; ++j) {
    bool any = false;
    for (int r = 0; r < rows.n; ++r) {
      if (load_f32(mask->row_ptr(rows.token[r]) + (c0 + j) * mask->nb[0]) != -INFINITY) {
        *sees |= 1u << r;
        any = true;
      }
    }
    if (any) idx[n++] = static_cast<int32_t>(j);
  }
  return n;
}

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
// r[i][j] -> r[j][i] for 8 registers of 8 floats.
void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}
#endif

// l[r] += p[r][i] for the n cells in order, for each of `rows` rows (probabilities kBlock
// apart): with AVX-512 the eight rows' sums are the lanes of one register of doubles, the
// probabilities transposed eight cells at a time so that a register holds one cell's rows.
void add_row_sums(double* l, const float* p, int rows, int64_t n) {
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  static_assert(kMaxRows == 8);
  const __mmask8 live = static_cast<__mmask8>((1u << rows) - 1);
  __m512d sums = _mm512_maskz_loadu_pd(live, l);
  for (int64_t i = 0; i < n; i += 8) {
    const int cells = static_cast<int>(std::min<int64_t>(8, n - i));
    const auto take = static_cast<__mmask8>((1u << cells) - 1);
    __m256 r[8];
    for (int j = 0; j < 8; ++j) {
      r[j] = j < rows ? _mm256_maskz_loadu_ps(take, p + j * kBlock + i) : _mm256_setzero_ps();
    }
    transpose8(r);
    for (int c = 0; c < cells; ++c) sums = _mm512_add_pd(sums, _mm512_maskz_cvtps_pd(0xff, r[c]));
  }
  _mm512_mask_storeu_pd(l, live, sums);
#else
  for (int64_t i = 0; i < n; ++i) {
    for (int r = 0; r < rows; ++r) l[r] += p[r * kBlock + i];
  }
#endif
}

// One KV head's rows of a work item: their queries, their running state over the cells of
// the current segment, and the total of their segments before it.
struct Group {
  Rows rows;
  uint8_t* qc;   ///< the rows' queries in k's dot type, q_row bytes apart
  float* acc;    ///< per row: running sum of p_j v_j [hd]
  float* tot;    ///< per row: the folded segments' sum of p_j v_j [hd]
  float* s;      ///< per row: scores, then probabilities, of the block's cells [kBlock]
  int32_t* idx;  ///< the block's cells visible to some row, as offsets within the block
  float m[kMaxRows];
  double l[kMaxRows];
  float m_tot[kMaxRows];
  double l_tot[kMaxRows];
  int64_t seen[kMaxRows];  ///< visible blocks the row has taken
};

// total += segment, both states (running max m, sum of probabilities l, sum of p_j v_j acc)
// relative to their own maximum: each rescaled to the larger one. An empty total takes the
// segment as it is, so a row's single segment keeps its bits.
void fold(float& m_tot, double& l_tot, float* acc_tot, float m, double l, const float* acc,
          int64_t hd) {
  if (m == -INFINITY) return;  // the segment showed the row nothing
  if (m_tot == -INFINITY) {
    m_tot = m;
    l_tot = l;
    std::copy(acc, acc + hd, acc_tot);
    return;
  }
  const float mx = std::max(m_tot, m);
  const float a = std::exp(m_tot - mx), b = std::exp(m - mx);
  for (int64_t i = 0; i < hd; ++i) acc_tot[i] = acc_tot[i] * a + acc[i] * b;
  l_tot = l_tot * a + l * b;
  m_tot = mx;
}

// Row r's segment into its total, and the segment's state emptied.
void close_segment(Group& g, int r, int64_t hd) {
  float* acc = g.acc + r * hd;
  fold(g.m_tot[r], g.l_tot[r], g.tot + r * hd, g.m[r], g.l[r], acc, hd);
  std::fill(acc, acc + hd, 0.0f);
  g.m[r] = -INFINITY;
  g.l[r] = 0.0;
}

// What every block of a node reads.
struct Node {
  const Tensor& k;
  const Tensor& v;
  const Tensor* mask;
  float softcap, scale;  ///< ggml divides the scale by the cap once: tanhf of s * (scale / cap)
  bool v_f16;
};

// The group's rows take the cells [c0, c0 + kBlock) into their running state; vbuf holds the
// block's V rows where they need converting.
void attend_block(const Node& nd, const Plan& p, Group& g, int64_t c0, float* vbuf) {
  const Tensor& k = nd.k;
  const Tensor* mask = nd.mask;
  const Rows& rows = g.rows;
  const int64_t hd = p.hd, n_kv = k.ne[1];
  uint32_t sees = 0;
  const int64_t n = visible_cells(mask, rows, c0, std::min(kBlock, n_kv - c0), g.idx, &sees);
  // A row's segment ends with its kSegmentBlocks-th visible block.
  for (int r = 0; r < rows.n; ++r) {
    if ((sees >> r & 1u) == 0) continue;
    if (g.seen[r] > 0 && g.seen[r] % kSegmentBlocks == 0) close_segment(g, r, hd);
    ++g.seen[r];
  }
  // Scores of runs of consecutive cells, tile by tile.
  for (int64_t i = 0; i < n;) {
    // Every cell visible: one run (tiles permitting) without comparing the offsets.
    int64_t run = n == kBlock ? std::min<int64_t>(n - i, p.max_w) : 1;
    while (i + run < n && run < p.max_w && g.idx[i + run] == g.idx[i] + run) ++run;
    for (int r = 0; r < rows.n; r += p.max_a) {
      p.tile(hd, k.row_ptr(c0 + g.idx[i], rows.kv_head), k.nb[1], static_cast<int>(run),
             g.qc + r * p.q_row, p.q_row, std::min(p.max_a, rows.n - r), g.s + r * kBlock + i, 1,
             kBlock);
    }
    i += run;
  }
  // Every cell visible, no cap and a dense mask row (decode, and prompt rows past the
  // diagonal): the scores in vectors, the same operations per cell.
  const bool dense_block =
      n == kBlock && nd.softcap == 0.0f && (mask == nullptr || mask->nb[0] == sizeof(float));
  float maxima[kMaxRows];
  if (dense_block) {
    const float* mv[kMaxRows];
    for (int r = 0; r < rows.n; ++r) {
      mv[r] = mask != nullptr ? reinterpret_cast<const float*>(mask->row_ptr(rows.token[r])) + c0
                              : nullptr;
    }
    dense_block_maxima(g.s, mv, rows.n, nd.scale, maxima);
  }
  for (int r = 0; r < rows.n; ++r) {
    float* s = g.s + r * kBlock;
    float bmax = -INFINITY;
    if (dense_block) {
      bmax = maxima[r];
    } else {
      const uint8_t* mrow = mask != nullptr ? mask->row_ptr(rows.token[r]) : nullptr;
      for (int64_t i = 0; i < n; ++i) {
        float x = s[i] * nd.scale;
        if (nd.softcap != 0.0f) x = nd.softcap * std::tanh(x);
        if (mrow != nullptr) {
          const float mv = load_f32(mrow + (c0 + g.idx[i]) * mask->nb[0]);
          x = mv == -INFINITY ? -INFINITY : x + mv;
        }
        s[i] = x;
        bmax = std::max(bmax, x);
      }
    }
    if (bmax == -INFINITY) {
      std::fill(s, s + n, 0.0f);  // nothing this row sees in the block
      continue;
    }
    if (bmax > g.m[r]) {
      if (g.m[r] != -INFINITY) {
        const float f = std::exp(g.m[r] - bmax);
        for (int64_t i = 0; i < hd; ++i) g.acc[r * hd + i] *= f;
        g.l[r] *= f;
      }
      g.m[r] = bmax;
    }
    exp_block(s, n, g.m[r]);
  }
  // The V rows of the block two ahead, this head's part of each: parts a cache row apart,
  // which the hardware prefetchers do not follow (K's rows are asked for by its tile).
  flash::RowsAhead ahead;
  if (const int64_t later = c0 + 2 * kBlock; later < n_kv) {
    ahead = {nd.v.row_ptr(later, rows.kv_head), nd.v.nb[1], core::row_size(nd.v.type, hd),
             std::min(kBlock, n_kv - later)};
  }
  const void* vr[kBlock];
  const uint8_t* v0 = nd.v.row_ptr(c0, rows.kv_head);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = v0 + g.idx[i] * nd.v.nb[1];
    vr[i] = nd.v_f16 ? static_cast<const void*>(row) : v_row(nd.v.type, row, vbuf + i * hd, hd);
  }
  // Each row's sum in cell order (hidden cells add exact zeros), the rows' chains side by side.
  add_row_sums(g.l, g.s, rows.n, n);
  accumulate_rows(g.acc, g.s, rows.n, vr, nd.v_f16, n, hd, ahead);
}

Node make_node(const Tensor& dst, const Plan& p) {
  const auto& fp = std::get<core::FlashAttnParams>(dst.params);
  return {*dst.src[1],
          *dst.src[2],
          dst.src[3],
          fp.softcap,
          fp.softcap != 0.0f ? fp.scale / fp.softcap : fp.scale,
          reads_f16_rows(dst.src[2]->type, p.hd)};
}

// Empty states, before a walk.
void start(Group* groups, int64_t n_groups, int64_t hd) {
  for (int64_t gi = 0; gi < n_groups; ++gi) {
    Group& g = groups[gi];
    const int n = g.rows.n;
    std::fill(g.acc, g.acc + n * hd, 0.0f);
    std::fill(g.tot, g.tot + n * hd, 0.0f);
    std::fill(g.m, g.m + n, -INFINITY);
    std::fill(g.l, g.l + n, 0.0);
    std::fill(g.m_tot, g.m_tot + n, -INFINITY);
    std::fill(g.l_tot, g.l_tot + n, 0.0);
    std::fill(g.seen, g.seen + n, int64_t{0});
  }
}

// out = acc / l of a row's total (zeros when it saw nothing).
void write_row(const Tensor& dst, const Rows& rows, int r, const float* acc, double l, int64_t hd) {
  const float inv = l > 0.0 ? static_cast<float>(1.0 / l) : 0.0f;
  auto* out = reinterpret_cast<float*>(dst.row_ptr(rows.head[r], rows.token[r]));
  for (int64_t i = 0; i < hd; ++i) out[i] = acc[i] * inv;
}

// An item's groups walk the cells block by block, side by side; then out = acc / l per row.
void attend(const Tensor& dst, const Plan& p, Group* groups, int64_t n_groups, float* vbuf) {
  const Node nd = make_node(dst, p);
  const int64_t hd = p.hd, n_kv = nd.k.ne[1];
  start(groups, n_groups, hd);
  for (int64_t c0 = 0; c0 < n_kv; c0 += kBlock) {
    for (int64_t gi = 0; gi < n_groups; ++gi) attend_block(nd, p, groups[gi], c0, vbuf);
  }
  for (int64_t gi = 0; gi < n_groups; ++gi) {
    Group& g = groups[gi];
    for (int r = 0; r < g.rows.n; ++r) {
      close_segment(g, r, hd);
      write_row(dst, g.rows, r, g.tot + r * hd, g.l_tot[r], hd);
    }
  }
}

// Item i's rows of its j-th KV head: token block outermost, then span of KV heads, then chunk
// of each head's query heads.
Rows item_rows(const Plan& p, int64_t item, int64_t j) {
  const int64_t chunk = item % p.head_chunks();
  const int64_t kv_head = item / p.head_chunks() % p.kv_spans() * p.kv_per_item + j;
  const int64_t t0 = item / (p.head_chunks() * p.kv_spans()) * p.tokens_per_item;
  const int64_t h0 = kv_head * p.group + chunk * p.heads_per_item;
  const int64_t h1 = std::min(h0 + p.heads_per_item, (kv_head + 1) * p.group);
  Rows rows;
  rows.kv_head = kv_head;
  for (int64_t t = t0; t < std::min(t0 + p.tokens_per_item, p.n_tokens); ++t) {
    for (int64_t h = h0; h < h1; ++h) {
      rows.token[rows.n] = t;
      rows.head[rows.n] = h;
      ++rows.n;
    }
  }
  return rows;
}

// Item `item`'s groups: their rows, and the rows' queries in k's dot type.
void load_item(const Tensor& q, const Plan& p, int64_t item, Group* groups, float* qf) {
  for (int64_t j = 0; j < p.kv_per_item; ++j) {
    Group& g = groups[j];
    g.rows = item_rows(p, item, j);
    for (int r = 0; r < g.rows.n; ++r) {
      gather_to_f32(Type::kF32, q.row_ptr(g.rows.token[r], g.rows.head[r]), q.nb[0], qf, p.hd);
      if (p.cells != nullptr) {
        p.cells->pack(qf, g.qc + r * p.q_row, p.hd);
      } else {
        convert_activations(p.dk->act_type, qf, g.qc + r * p.q_row, p.hd);
      }
    }
  }
}

// One token's visible blocks, in order, by visible_cells' test; returns how many.
int64_t visible_blocks(const Tensor* mask, int64_t n_kv, int32_t* blocks) {
  Rows token;
  token.n = 1;
  int32_t idx[kBlock];
  int64_t n = 0;
  for (int64_t c0 = 0; c0 < n_kv; c0 += kBlock) {
    uint32_t sees = 0;
    visible_cells(mask, token, c0, std::min(kBlock, n_kv - c0), idx, &sees);
    if (sees != 0) blocks[n++] = static_cast<int32_t>(c0 / kBlock);
  }
  return n;
}

// One token over several segments: items are (segment, span of KV heads, chunk of query
// heads), dealt in work shares; each writes its rows' segment states, which the threads then
// fold in segment order, a range of query heads each. `seg` is the plan of one segment's items.
void attend_segments(const Tensor& dst, const Plan& seg, const int32_t* blocks, int64_t n_blocks,
                     Group* groups, float* qf, float* vbuf, uint8_t* shared,
                     const KernelArgs& args) {
  const Tensor& q = *dst.src[0];
  const Node nd = make_node(dst, seg);
  const int64_t hd = seg.hd, n_head = q.ne[2];
  const int64_t n_seg = n_segments(n_blocks);
  auto* seg_acc = reinterpret_cast<float*>(shared);
  auto* seg_m = reinterpret_cast<float*>(shared + seg.off_seg_m);
  auto* seg_l = reinterpret_cast<double*>(shared + seg.off_seg_l);
  const int64_t per_segment = seg.items(), items = n_seg * per_segment;
  const bool shares = has_work_shares(args, items);
  if (shares) publish_share(args, items);
  args.barrier();
  int64_t next_mine = args.ith;
  const auto next_item = [&]() -> int64_t {
    if (shares) return claim_item(args);
    const int64_t i = next_mine;
    next_mine += args.nth;
    return i < items ? i : -1;
  };
  for (int64_t item = next_item(); item >= 0; item = next_item()) {
    const int64_t sg = item / per_segment;
    load_item(q, seg, item % per_segment, groups, qf);
    start(groups, seg.kv_per_item, hd);
    const int64_t b1 = std::min(n_blocks, (sg + 1) * kSegmentBlocks);
    for (int64_t b = sg * kSegmentBlocks; b < b1; ++b) {
      for (int64_t j = 0; j < seg.kv_per_item; ++j) {
        attend_block(nd, seg, groups[j], int64_t{blocks[b]} * kBlock, vbuf);
      }
    }
    for (int64_t j = 0; j < seg.kv_per_item; ++j) {
      const Group& g = groups[j];
      for (int r = 0; r < g.rows.n; ++r) {
        const int64_t state = sg * n_head + g.rows.head[r];
        std::copy(g.acc + r * hd, g.acc + (r + 1) * hd, seg_acc + state * hd);
        seg_m[state] = g.m[r];
        seg_l[state] = g.l[r];
      }
    }
  }
  args.barrier();
  Rows row;
  row.n = 1;
  const Range heads = split_range(n_head, args.ith, args.nth);
  for (int64_t h = heads.begin; h < heads.end; ++h) {
    float m = -INFINITY;
    double l = 0.0;
    float* acc = qf;  // hd floats of this thread's scratch
    std::fill(acc, acc + hd, 0.0f);
    for (int64_t sg = 0; sg < n_seg; ++sg) {
      const int64_t state = sg * n_head + h;
      fold(m, l, acc, seg_m[state], seg_l[state], seg_acc + state * hd, hd);
    }
    row.head[0] = h;
    write_row(dst, row, 0, acc, l, hd);
  }
}

// The plan of one segment's items: the widest span of KV heads (a contiguous stretch of each
// cache row), narrowed while the segments' items are too few to keep the threads busy.
Plan segment_plan(const Plan& p, int64_t n_seg, int nth) {
  Plan seg = p;
  seg.heads_per_item = std::min<int64_t>(p.group, kMaxRows);
  seg.tokens_per_item = 1;
  seg.kv_per_item = 1;
  for (int64_t d = p.segment_span; d >= 1; --d) {
    if (p.n_head_kv % d != 0) continue;
    seg.kv_per_item = d;
    if (n_seg * seg.items() >= 4 * static_cast<int64_t>(nth)) break;
  }
  return seg;
}

}  // namespace

size_t flash_attn_work_size(const Tensor& dst, int nth) {
  const Plan p = make_plan(dst, nth);
  return scratch_bytes(p.shared, p.total, nth);
}

void flash_attn(const Tensor& dst, const KernelArgs& args) {
  const Tensor& q = *dst.src[0];
  const Plan p = make_plan(dst, args.nth);
  uint8_t* area = thread_scratch(args, p.shared, p.total);
  auto* qf = reinterpret_cast<float*>(area + p.off_q);
  auto* vbuf = reinterpret_cast<float*>(area + p.off_v);
  Group groups[kMaxSpan];
  for (int64_t j = 0; j < std::max(p.kv_per_item, p.segment_span); ++j) {
    Group& g = groups[j];
    g.qc = area + p.off_qc + j * kMaxRows * p.q_row;
    g.acc = reinterpret_cast<float*>(area + p.off_acc) + j * kMaxRows * p.hd;
    g.tot = reinterpret_cast<float*>(area + p.off_tot) + j * kMaxRows * p.hd;
    g.s = reinterpret_cast<float*>(area + p.off_s) + j * kMaxRows * kBlock;
    g.idx = reinterpret_cast<int32_t*>(area + p.off_idx) + j * kBlock;
  }
  if (p.n_tokens == 1) {
    auto* blocks = reinterpret_cast<int32_t*>(area + p.off_blocks);
    const int64_t n_blocks = visible_blocks(dst.src[3], dst.src[1]->ne[1], blocks);
    const int64_t n_seg = n_segments(n_blocks);
    if (n_seg > 1) {
      attend_segments(dst, segment_plan(p, n_seg, args.nth), blocks, n_blocks, groups, qf, vbuf,
                      aligned_scratch(args), args);
      return;
    }
  }
  for (int64_t item = args.ith; item < p.items(); item += args.nth) {
    load_item(q, p, item, groups, qf);
    attend(dst, p, groups, p.kv_per_item, vbuf);
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
