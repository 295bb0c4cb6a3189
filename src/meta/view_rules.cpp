// Split states through views: reshape, permute, transpose and strided views of split tensors.
#include "meta/expansion_builder.h"

namespace strata::meta::detail {

Tensor* Builder::same_view(int d, const Tensor* v, Tensor* b) {
  Tensor* t = nullptr;
  switch (v->op) {
    case Op::kReshape:
      t = core::reshape(ctx(d), b, v->ne);
      break;
    case Op::kPermute: {
      const auto& p = std::get<core::PermuteParams>(v->params);
      t = core::permute(ctx(d), b, {p.axes[0], p.axes[1], p.axes[2], p.axes[3]});
      break;
    }
    case Op::kTranspose:
      t = core::transpose(ctx(d), b);
      break;
    default:
      t = core::view(ctx(d), b, v->ne, v->nb, v->view_offset - offset_of(v->src[0]));
      break;
  }
  return track(d, t);
}

std::optional<Dist> Builder::map_view(const Tensor* v, const Dist& base) {
  if (base.whole) return whole(const_cast<Tensor*>(v));
  Dist out;
  out.kind = base.kind;
  out.shard.resize(static_cast<size_t>(n_));
  if (base.kind != Kind::kSplit) {
    for (int d = 0; d < n_; ++d)
      out.shard[static_cast<size_t>(d)] = same_view(d, v, base.shard[static_cast<size_t>(d)]);
    return out;
  }
  switch (v->op) {
    case Op::kReshape:
      return map_reshape(v, base);
    case Op::kPermute:
    case Op::kTranspose: {
      int a = base.axis;
      if (v->op == Op::kTranspose) {
        a = a == 0 ? 1 : a == 1 ? 0 : a;
      } else {
        a = std::get<core::PermuteParams>(v->params).axes[static_cast<size_t>(a)];
      }
      out.axis = a;
      out.pieces = base.pieces;
      for (int d = 0; d < n_; ++d)
        out.shard[static_cast<size_t>(d)] = same_view(d, v, base.shard[static_cast<size_t>(d)]);
      return out;
    }
    default:
      return map_strided_view(v, base);
  }
}

std::optional<Dist> Builder::map_reshape(const Tensor* v, const Dist& base) {
  const Tensor* bt = v->src[0];
  const auto a = static_cast<size_t>(base.axis);
  int64_t inner = 1;
  for (size_t k = 0; k < a; ++k) inner *= bt->ne[k];
  const int64_t run = inner * bt->ne[a];
  int64_t prefix = 1;
  for (size_t b = 0; b < core::kMaxDims; ++b) {
    const int64_t below = prefix;
    prefix *= v->ne[b];
    if (prefix != run) continue;
    for (const Pieces& p : base.pieces) {
      for (const Range& r : p) {
        if ((r.lo * inner) % below != 0 || (r.hi * inner) % below != 0) return std::nullopt;
      }
    }
    Dist out;
    out.kind = Kind::kSplit;
    out.axis = static_cast<int>(b);
    out.pieces = scale_pieces(base.pieces, inner, below);
    for (int d = 0; d < n_; ++d) {
      core::Shape ne = v->ne;
      ne[b] = total(out.pieces[static_cast<size_t>(d)]);
      out.shard.push_back(track(d, core::reshape(ctx(d), base.shard[static_cast<size_t>(d)], ne)));
    }
    return out;
  }
  return std::nullopt;
}

std::optional<Dist> Builder::map_strided_view(const Tensor* v, const Dist& base) {
  const Tensor* bt = v->src[0];
  if (!bt->is_contiguous()) return std::nullopt;
  const auto a = static_cast<size_t>(base.axis);
  const size_t type_bytes = core::type_size(bt->type);
  const int64_t block = core::block_size(bt->type);
  const size_t above = a + 1 < core::kMaxDims ? bt->nb[a + 1] : SIZE_MAX;
  // Units of the split axis one step of a view stride covers (0: not a whole number).
  auto units_of = [&](size_t stride) -> int64_t {
    if (a == 0)
      return stride % type_bytes == 0 ? static_cast<int64_t>(stride / type_bytes) * block : 0;
    return stride % bt->nb[a] == 0 ? static_cast<int64_t>(stride / bt->nb[a]) : 0;
  };
  // Where the view starts, in the source's coordinates.
  size_t rel = v->view_offset - offset_of(bt);
  std::array<int64_t, core::kMaxDims> c{};
  for (size_t k = core::kMaxDims; k-- > a + 1;) {
    c[k] = static_cast<int64_t>(rel / bt->nb[k]);
    rel %= bt->nb[k];
  }
  const int64_t start = units_of(rel - (a == 0 ? 0 : rel % bt->nb[a]));
  const size_t inner = a == 0 ? 0 : rel % bt->nb[a];
  if (a == 0 && rel % type_bytes != 0) return std::nullopt;
  // The view axis walking the split axis: the widest stride below the next source axis (on a
  // tie the outer axis: a quantized head of one block has the stride of axis 0's blocks).
  int j = -1;
  for (size_t i = 0; i < core::kMaxDims; ++i) {
    if (v->ne[i] <= 1 || v->nb[i] >= above || units_of(v->nb[i]) == 0) continue;
    if (j < 0 || v->nb[i] >= v->nb[static_cast<size_t>(j)]) j = static_cast<int>(i);
  }
  if (j < 0) return std::nullopt;
  const auto ju = static_cast<size_t>(j);
  const int64_t unit = units_of(v->nb[ju]);
  for (size_t i = 0; i < core::kMaxDims; ++i) {
    if (i == ju || v->ne[i] <= 1 || v->nb[i] >= above) continue;
    // Bytes the axis spans (a quantized row's elements come in blocks).
    const size_t extent =
        i == 0 ? core::row_size(v->type, v->ne[0]) : static_cast<size_t>(v->ne[i]) * v->nb[i];
    if (extent > v->nb[ju]) return std::nullopt;
  }
  const Range covered{start, start + v->ne[ju] * unit};
  Dist out;
  out.kind = Kind::kSplit;
  out.axis = j;
  for (int d = 0; d < n_; ++d) {
    const Pieces& mine = base.pieces[static_cast<size_t>(d)];
    std::optional<Range> hit;
    int64_t pos = 0;
    for (const Range& r : mine) {
      const Range x{std::max(r.lo, covered.lo), std::min(r.hi, covered.hi)};
      if (x.lo < x.hi) {
        if (hit) return std::nullopt;
        hit = x;
        pos += x.lo - r.lo;
      } else if (!hit) {
        pos += r.size();
      }
    }
    if (!hit || (hit->lo - covered.lo) % unit != 0 || hit->size() % unit != 0) return std::nullopt;
    Tensor* shard = base.shard[static_cast<size_t>(d)];
    core::Shape ne = v->ne;
    ne[ju] = hit->size() / unit;
    core::Strides nb = v->nb;
    for (size_t i = 0; i < core::kMaxDims; ++i) {
      if (v->nb[i] < above) continue;
      // A stride over outer source axes: the same count of the shard's rows.
      size_t k = core::kMaxDims - 1;
      while (k > a + 1 && bt->nb[k] > v->nb[i]) --k;
      if (v->nb[i] % bt->nb[k] != 0) return std::nullopt;
      nb[i] = v->nb[i] / bt->nb[k] * shard->nb[k];
    }
    size_t offset = axis_bytes(*shard, static_cast<int>(a), pos) + inner;
    for (size_t k = a + 1; k < core::kMaxDims; ++k)
      offset += static_cast<size_t>(c[k]) * shard->nb[k];
    out.pieces.push_back({{(hit->lo - covered.lo) / unit, (hit->hi - covered.lo) / unit}});
    out.shard.push_back(track(d, core::view(ctx(d), shard, ne, nb, offset)));
  }
  return out;
}

Tensor* Builder::slice(int d, Tensor* t, int axis, const Range& r) {
  core::Shape ne = t->ne;
  ne[static_cast<size_t>(axis)] = r.size();
  return track(d, core::view(ctx(d), t, ne, t->nb, axis_bytes(*t, axis, r.lo)));
}

}  // namespace strata::meta::detail
