// The split rule of each op: the sources' states in, the node's state and its shards out.
#include "meta/expansion_builder.h"

namespace strata::meta::detail {

Tensor* Builder::clone(int d, const Tensor& n, const std::array<Tensor*, core::kMaxSrc>& src,
                       const core::Shape& ne) {
  Tensor* t = ctx(d).new_tensor(n.type, ne, n.name);
  t->op = n.op;
  t->params = n.params;
  t->src = src;
  emit(d, t);
  return t;
}

Dist& Builder::reduced(Tensor* s) {
  if (of(s).kind == Kind::kPartial) reduce(s);
  return of(s);
}

bool Builder::apply(Tensor* n) {
  switch (n->op) {
    case Op::kAdd:
    case Op::kMul:
    case Op::kDiv:
    case Op::kSwiglu:
      return elementwise(n, 2, 0);
    case Op::kScale:
    case Op::kSilu:
    case Op::kGelu:
    case Op::kTanh:
    case Op::kCpy:
      return elementwise(n, 1, 0);
    case Op::kRmsNorm:
      return elementwise(n, 1, 1u << 0);
    case Op::kSoftMax:
      return elementwise(n, 2, 1u << 0);
    case Op::kRope:
      // Rows rotate on their own; positions go with dimension 2, so that one stays whole.
      return elementwise(n, 1, (1u << 0) | (1u << 2));
    case Op::kGetRows:
      return get_rows(n);
    case Op::kMulMat:
    case Op::kMulMatId:
      return mul_mat(n);
    case Op::kFlashAttn:
      return flash_attn(n);
    case Op::kSetRows:
      return set_rows(n);
    default:
      return false;
  }
}

bool Builder::elementwise(Tensor* n, int shaped, unsigned forbidden) {
  const Dist* lead = nullptr;
  for (int i = 0; i < shaped; ++i) {
    Tensor* s = n->src[static_cast<size_t>(i)];
    if (s == nullptr) continue;
    const Dist& x = reduced(s);
    if (x.kind == Kind::kSplit && lead == nullptr) lead = &x;
  }
  for (size_t i = static_cast<size_t>(shaped); i < core::kMaxSrc; ++i) {
    if (n->src[i] != nullptr && reduced(n->src[i]).kind != Kind::kMirrored) return false;
  }
  if (lead == nullptr) {
    std::vector<Tensor*> out(static_cast<size_t>(n_));
    for (int d = 0; d < n_; ++d) {
      std::array<Tensor*, core::kMaxSrc> src{};
      for (size_t i = 0; i < core::kMaxSrc; ++i) {
        if (n->src[i] != nullptr) src[i] = use(of(n->src[i]), d);
      }
      out[static_cast<size_t>(d)] = clone(d, *n, src, n->ne);
    }
    Dist m;
    m.shard = std::move(out);
    dist_.insert_or_assign(n, std::move(m));
    return true;
  }
  const int a = lead->axis;
  const auto au = static_cast<size_t>(a);
  if ((forbidden >> a) & 1u) return false;
  const std::vector<Pieces> pieces = lead->pieces;
  for (int i = 0; i < shaped; ++i) {
    Tensor* s = n->src[static_cast<size_t>(i)];
    if (s == nullptr) continue;
    const Dist& x = of(s);
    if (x.kind == Kind::kSplit) {
      if (x.axis != a || x.pieces != pieces) return false;
    } else if (s->ne[au] != 1 && (s->ne[au] != n->ne[au] || !single_pieces(pieces))) {
      return false;
    }
  }
  Dist out;
  out.kind = Kind::kSplit;
  out.axis = a;
  out.pieces = pieces;
  for (int d = 0; d < n_; ++d) {
    const Range& mine = pieces[static_cast<size_t>(d)].front();
    std::array<Tensor*, core::kMaxSrc> src{};
    for (size_t i = 0; i < core::kMaxSrc; ++i) {
      Tensor* s = n->src[i];
      if (s == nullptr) continue;
      const Dist& x = of(s);
      Tensor* t = use(x, d);
      if (static_cast<int>(i) < shaped && x.kind != Kind::kSplit && s->ne[au] != 1) {
        t = slice(d, t, a, mine);
      }
      src[i] = t;
    }
    core::Shape ne = n->ne;
    ne[au] = total(pieces[static_cast<size_t>(d)]);
    out.shard.push_back(clone(d, *n, src, ne));
  }
  dist_.insert_or_assign(n, std::move(out));
  return true;
}

bool Builder::get_rows(Tensor* n) {
  if (reduced(n->src[1]).kind != Kind::kMirrored) return false;
  const Dist& tb = of(n->src[0]);
  if (tb.kind == Kind::kSplit && tb.axis != 0) return false;
  Dist out;
  out.kind = tb.kind;
  out.axis = tb.axis;
  out.pieces = tb.pieces;
  for (int d = 0; d < n_; ++d) {
    core::Shape ne = n->ne;
    if (tb.kind == Kind::kSplit) ne[0] = total(tb.pieces[static_cast<size_t>(d)]);
    Tensor* table = use(tb, d);
    out.shard.push_back(clone(d, *n, {table, use(of(n->src[1]), d), nullptr, nullptr}, ne));
  }
  dist_.insert_or_assign(n, std::move(out));
  return true;
}

bool Builder::mul_mat(Tensor* n) {
  Tensor* a = n->src[0];
  Tensor* b = n->src[1];
  // mul_mat_id's expert ids or mul_mat's mask, whole on every member. A mask goes only where
  // each member's output keeps every row and column of it: a split over heads, or none.
  Tensor* third = n->src[2];
  if (third != nullptr && reduced(third).kind != Kind::kMirrored) return false;
  Tensor* ids = n->op == Op::kMulMatId ? third : nullptr;
  Tensor* mask = n->op == Op::kMulMat ? third : nullptr;
  const Dist A = reduced(a);
  const Dist B = reduced(b);
  const bool as = A.kind == Kind::kSplit, bs = B.kind == Kind::kSplit;
  // Which case, and per member the operands and the output's shape.
  std::vector<std::array<Tensor*, core::kMaxSrc>> src(static_cast<size_t>(n_));
  std::vector<core::Shape> ne(static_cast<size_t>(n_), n->ne);
  Dist out;
  if (as && A.axis == 1 && !bs && mask == nullptr) {
    // Output features split (Q, K, V, gate, up, vocabulary rows): a split output.
    out.kind = Kind::kSplit;
    out.axis = 0;
    out.pieces = A.pieces;
    for (int d = 0; d < n_; ++d) {
      src[static_cast<size_t>(d)] = {use(A, d), use(B, d), ids ? use(of(ids), d) : nullptr,
                                     nullptr};
      ne[static_cast<size_t>(d)][0] = total(A.pieces[static_cast<size_t>(d)]);
    }
  } else if (mask == nullptr && ((as && A.axis == 0) || (bs && B.axis == 0 && !as))) {
    // Input features split (attention output, FFN down): partial sums.
    const Dist& lead = as ? A : B;
    if ((as && bs && (B.axis != 0 || B.pieces != A.pieces)) ||
        (!(as && bs) && !single_pieces(lead.pieces)) ||
        (bs && !as && core::is_quantized(a->type))) {
      return false;
    }
    out.kind = Kind::kPartial;
    for (int d = 0; d < n_; ++d) {
      const Range& mine = lead.pieces[static_cast<size_t>(d)].front();
      Tensor* ad = as ? use(A, d) : slice(d, use(A, d), 0, mine);
      Tensor* bd = bs ? use(B, d) : slice(d, use(B, d), 0, mine);
      src[static_cast<size_t>(d)] = {ad, bd, ids ? use(of(ids), d) : nullptr, nullptr};
    }
  } else if (ids == nullptr && ((as && A.axis == 2) || (bs && B.axis == 2))) {
    // Heads (attention scores and their product with V): a split over dimension 2, K's and V's
    // heads shared by groups of query heads.
    if ((as && A.axis != 2) || (bs && B.axis != 2) || a->ne[2] == 0 || b->ne[2] % a->ne[2] != 0) {
      return false;
    }
    const int64_t r = b->ne[2] / a->ne[2];
    std::vector<Pieces> pa, pb;
    if (as) {
      pa = A.pieces;
      pb = scale_pieces(pa, r, 1);
      if (bs && B.pieces != pb) return false;
    } else {
      pb = B.pieces;
      if (!divides_pieces(pb, r)) return false;
      pa = scale_pieces(pb, 1, r);
    }
    if (!single_pieces(pb)) return false;
    out.kind = Kind::kSplit;
    out.axis = 2;
    out.pieces = pb;
    for (int d = 0; d < n_; ++d) {
      const auto du = static_cast<size_t>(d);
      Tensor* ad = as ? use(A, d) : slice(d, use(A, d), 2, pa[du].front());
      Tensor* bd = bs ? use(B, d) : slice(d, use(B, d), 2, pb[du].front());
      src[du] = {ad, bd, mask ? use(of(mask), d) : nullptr, nullptr};
      ne[du][2] = total(pb[du]);
    }
  } else if (!as && !bs) {
    for (int d = 0; d < n_; ++d) {
      src[static_cast<size_t>(d)] = {use(A, d), use(B, d), third ? use(of(third), d) : nullptr,
                                     nullptr};
    }
  } else {
    return false;
  }
  for (int d = 0; d < n_; ++d) {
    out.shard.push_back(clone(d, *n, src[static_cast<size_t>(d)], ne[static_cast<size_t>(d)]));
  }
  dist_.insert_or_assign(n, std::move(out));
  return true;
}

bool Builder::flash_attn(Tensor* n) {
  Tensor* q = n->src[0];
  Tensor* k = n->src[1];
  Tensor* v = n->src[2];
  Tensor* mask = n->src[3];
  if (mask != nullptr && reduced(mask).kind != Kind::kMirrored) return false;
  const Dist Q = reduced(q), K = reduced(k), V = reduced(v);
  for (const Dist* x : {&Q, &K, &V}) {
    if (x->kind == Kind::kSplit && x->axis != 2) return false;
  }
  if (k->ne[2] == 0 || q->ne[2] % k->ne[2] != 0) return false;
  const int64_t r = q->ne[2] / k->ne[2];
  std::vector<Pieces> pq;
  if (Q.kind == Kind::kSplit) {
    pq = Q.pieces;
  } else if (K.kind == Kind::kSplit) {
    pq = scale_pieces(K.pieces, r, 1);
  } else if (V.kind == Kind::kSplit) {
    pq = scale_pieces(V.pieces, r, 1);
  } else {
    return false;
  }
  if (!single_pieces(pq) || !divides_pieces(pq, r)) return false;
  const std::vector<Pieces> pk = scale_pieces(pq, 1, r);
  if ((K.kind == Kind::kSplit && K.pieces != pk) || (V.kind == Kind::kSplit && V.pieces != pk)) {
    return false;
  }
  Dist out;
  out.kind = Kind::kSplit;
  out.axis = 1;
  out.pieces = pq;
  for (int d = 0; d < n_; ++d) {
    const auto du = static_cast<size_t>(d);
    auto part = [&](const Dist& x, const std::vector<Pieces>& p) {
      Tensor* t = use(x, d);
      return x.kind == Kind::kSplit ? t : slice(d, t, 2, p[du].front());
    };
    core::Shape ne = n->ne;
    ne[1] = total(pq[du]);
    out.shard.push_back(clone(
        d, *n, {part(Q, pq), part(K, pk), part(V, pk), mask ? use(of(mask), d) : nullptr}, ne));
  }
  dist_.insert_or_assign(n, std::move(out));
  return true;
}

bool Builder::set_rows(Tensor* n) {
  const Dist D = of(n->src[0]);
  const bool split = D.kind == Kind::kSplit;
  if (D.whole || D.kind == Kind::kPartial || (split && D.axis != 0)) return false;
  if (reduced(n->src[2]).kind != Kind::kMirrored) return false;
  Tensor* rows = n->src[1];
  Dist R = reduced(rows);
  if (R.kind == Kind::kSplit && (!split || R.axis != 0 || R.pieces != D.pieces)) {
    materialize(const_cast<Tensor*>(core::storage_of(rows)));
    R = whole(rows);
  }
  if (split && R.kind != Kind::kSplit && !single_pieces(D.pieces)) return false;
  Dist out = D;
  out.shard.clear();
  for (int d = 0; d < n_; ++d) {
    const auto du = static_cast<size_t>(d);
    Tensor* cache = D.shard[du];
    Tensor* r = use(R, d);
    if (split && R.kind != Kind::kSplit) r = slice(d, r, 0, D.pieces[du].front());
    Tensor* t = ctx(d).new_tensor(n->type, cache->ne, n->name);
    t->op = Op::kSetRows;
    t->nb = cache->nb;
    t->src = {cache, r, use(of(n->src[2]), d), nullptr};
    t->view_src = const_cast<Tensor*>(core::storage_of(cache));
    t->view_offset = offset_of(cache);
    emit(d, t);
    out.shard.push_back(t);
  }
  dist_.insert_or_assign(n, std::move(out));
  return true;
}

void Builder::fallback(Tensor* n) {
  std::array<Dist, core::kMaxSrc> x;
  for (size_t i = 0; i < core::kMaxSrc; ++i) {
    Tensor* s = n->src[i];
    if (s == nullptr) continue;
    x[i] = reduced(s);
    if (x[i].kind == Kind::kSplit) {
      materialize(const_cast<Tensor*>(core::storage_of(s)));
      x[i] = whole(s);
    }
  }
  Dist m;
  for (int d = 0; d < n_; ++d) {
    std::array<Tensor*, core::kMaxSrc> src{};
    for (size_t i = 0; i < core::kMaxSrc; ++i) {
      if (n->src[i] != nullptr) src[i] = use(x[i], d);
    }
    m.shard.push_back(clone(d, *n, src, n->ne));
  }
  dist_.insert_or_assign(n, std::move(m));
  x_.log += "meta: " + n->name + " (" + std::string(core::op_name(n->op)) +
            ") has no split rule for its inputs: every device computes it whole\n";
}

}  // namespace strata::meta::detail
