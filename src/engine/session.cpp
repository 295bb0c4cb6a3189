#include "engine/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <string>

namespace strata::engine {
namespace {

Status invalid(const std::string& what) {
  return error(ErrorCode::kInvalidArgument, what);
}

}  // namespace

model::WeightPlacement weight_placement(const Layout& layout, backend::Device& host) {
  return [layout, &host](int64_t layer) -> memory::BufferType& {
    backend::Device* d = layout.device_of(layer);
    return d != nullptr ? d->buffer_type() : host.buffer_type();
  };
}

Result<std::unique_ptr<Session>> Session::create(const model::Model& model, backend::Device& device,
                                                 const SessionParams& params) {
  return create(model, device, Layout{}, params);
}

Result<std::unique_ptr<Session>> Session::create(const model::Model& model, backend::Device& host,
                                                 const Layout& layout,
                                                 const SessionParams& params) {
  // A session that cannot be created is destroyed as it unwinds: nothing outlives the call.
  return out_of_memory_as_error("creating the session",
                                [&] { return create_unguarded(model, host, layout, params); });
}

Result<std::unique_ptr<Session>> Session::create_unguarded(const model::Model& model,
                                                           backend::Device& host,
                                                           const Layout& layout,
                                                           const SessionParams& params) {
  const auto& hp = model.hparams();
  SessionParams p = params;
  if (p.n_ctx < 0) return invalid("context size must not be negative");
  if (p.n_ctx == 0) p.n_ctx = hp.n_ctx_train;
  if (p.n_batch < 1) return invalid("batch size must be at least 1");
  if (p.n_ubatch < 1) return invalid("micro-batch size must be at least 1");
  p.n_ubatch = std::min(p.n_ubatch, p.n_batch);
  if (p.kv_paging.enabled()) p.paged = true;
  if (core::is_quantized(p.type_v) && !p.flash_attn) {
    return invalid("a " + std::string(core::type_name(p.type_v)) +
                   " V cache needs flash attention (-fa): the unfused path reads V transposed");
  }

  std::unique_ptr<Session> s(new Session());
  s->model_ = &model;
  s->params_ = p;
  std::vector<backend::Backend*> order;
  for (backend::Device* d : layout.devices) {
    auto be = d->make_backend({p.n_threads});
    if (!be.ok()) return be.status();
    s->backends_.push_back(std::move(be).value());
  }
  auto host_backend = host.make_backend({p.n_threads});
  if (!host_backend.ok()) return host_backend.status();
  s->backends_.push_back(std::move(host_backend).value());
  if (p.paged) {
    auto fences = LayerFences::wrap(s->backends_, hp.n_layer);
    if (!fences.ok()) return fences.status();
    s->fences_ = std::move(fences).value();
  }
  for (auto& b : s->backends_) order.push_back(b.get());

  auto cache = KvCache::create(hp, {p.n_ctx, p.type_k, p.type_v, p.kv_paging},
                               [&layout, &host](int64_t layer) -> memory::BufferType& {
                                 backend::Device* d = layout.kv_device_of(layer);
                                 return d != nullptr ? d->buffer_type() : host.buffer_type();
                               });
  if (!cache.ok()) return cache.status();
  s->cache_ = std::move(cache).value();
  s->sched_ = std::make_unique<sched::Scheduler>(std::move(order));
  if (KvPaging* paging = s->cache_->paging()) {
    auto admit = host.make_event();
    if (!admit.ok()) return admit.status();
    s->admit_ = std::move(admit).value();
    // A layer's output is computed with its weights: on its device (devices first in the
    // session's backends, the host last). LayerFences::collect checks it every micro-batch.
    std::vector<int> runs_on;
    const int host_index = static_cast<int>(s->backends_.size()) - 1;
    for (int64_t l = 0; l < hp.n_layer; ++l) {
      const int d = l < static_cast<int64_t>(layout.layer_device.size())
                        ? layout.layer_device[static_cast<size_t>(l)]
                        : -1;
      runs_on.push_back(d < 0 ? host_index : d);
    }
    s->pager_ = std::make_unique<KvPager>(*paging, hp.n_layer, s->fences_->events(),
                                          std::move(runs_on), *s->admit_);
  }

  // Size the compute buffers once, for the largest micro-batch over a full cache.
  core::Context ctx;
  const int64_t n = std::min(p.n_ubatch, p.n_ctx);
  auto g = model.build_graph(ctx, s->cache_->tensors(), {n, p.n_ctx, n}, {p.flash_attn});
  if (!ctx.ok()) return ctx.status().with_context("building the graph");
  STRATA_RETURN_IF_ERROR(s->sched_->reserve(g.graph));
  return s;
}

void Batch::add(int32_t token, int32_t position, int32_t sequence, bool keep_logits) {
  tokens.push_back(token);
  pos.push_back(position);
  seq.push_back(sequence);
  logits.push_back(keep_logits ? 1 : 0);
}

void Batch::clear() {
  tokens.clear();
  pos.clear();
  seq.clear();
  logits.clear();
}

Status Session::decode(std::span<const int32_t> tokens, bool all_logits) {
  // Nothing has changed if building the batch fails; decode(batch) handles its own failures.
  return out_of_memory_as_error("decode", [&] { return decode_sequence(tokens, all_logits); });
}

Status Session::decode_sequence(std::span<const int32_t> tokens, bool all_logits) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) return invalid("decode: no tokens");
  if (n_past() + n > n_ctx()) {
    return error(ErrorCode::kOutOfRange, "context overflow: " + std::to_string(n_past()) +
                                             " cached + " + std::to_string(n) +
                                             " new tokens exceed the context size of " +
                                             std::to_string(n_ctx()) + " (raise -c)");
  }
  Batch b;
  const auto first = static_cast<int32_t>(n_past());
  for (int64_t i = 0; i < n; ++i) {
    b.add(tokens[static_cast<size_t>(i)], first + static_cast<int32_t>(i), 0,
          all_logits || i == n - 1);
  }
  return decode(b);
}

Status Session::decode(const Batch& batch) {
  const auto n = static_cast<int64_t>(batch.size());
  if (n == 0) return invalid("decode: no tokens");
  if (batch.pos.size() != batch.tokens.size() || batch.seq.size() != batch.tokens.size() ||
      batch.logits.size() != batch.tokens.size()) {
    return invalid("decode: a batch needs a position, a sequence and a logits flag per token");
  }
  if (n > params_.n_batch) {
    return invalid("decode: " + std::to_string(n) + " tokens exceed the batch size " +
                   std::to_string(params_.n_batch));
  }
  const int32_t n_vocab = model_->tokenizer().n_vocab();
  for (int32_t t : batch.tokens) {
    if (t < 0 || t >= n_vocab)
      return invalid("decode: token id " + std::to_string(t) + " is out of range");
  }
  const auto n_vocab_sz = static_cast<size_t>(n_vocab);
  const auto n_out = static_cast<size_t>(
      std::count_if(batch.logits.begin(), batch.logits.end(), [](uint8_t f) { return f != 0; }));
  std::vector<float> out;
  std::vector<int32_t> claimed_cells, claimed_seqs;  // undone if the call fails
  // A deque: queued transfers read from each entry, so entries must never move.
  std::deque<InFlight> in_flight;
  bool recorded = true;  // whether in_flight.back()'s cells are in claimed_cells
  Status st;
  // An allocation that fails anywhere below (a container, a graph node) ends the call like
  // any other error: queued work is waited for and the claimed cells are given back.
  try {
    // Sized up front: queued reads of the logits write into `out` while later micro-batches
    // run; the claimed lists never grow during the loop, so recording cannot fail.
    out.resize(n_out * n_vocab_sz);
    claimed_cells.reserve(static_cast<size_t>(n));
    claimed_seqs.reserve(static_cast<size_t>(n));
    size_t row = 0;
    for (int64_t i = 0; i < n && st.ok(); i += params_.n_ubatch) {
      const int64_t len = std::min(params_.n_ubatch, n - i);
      InFlight& f = in_flight.emplace_back();
      recorded = false;
      st = run_ubatch(batch, i, len, out.data() + row * n_vocab_sz, f);
      claimed_cells.insert(claimed_cells.end(), f.slots.begin(), f.slots.end());
      claimed_seqs.insert(claimed_seqs.end(), f.seqs.begin(), f.seqs.end());
      recorded = true;
      row += f.kept;
      // Without pipelining each micro-batch completes before the next is queued.
      if (st.ok() && !params_.pipeline) {
        st = sched_->synchronize();
        in_flight.clear();
      }
    }
  } catch (const std::bad_alloc&) {
    st = error(ErrorCode::kOutOfMemory, "decode: out of memory");
    if (!recorded) {
      const InFlight& f = in_flight.back();
      claimed_cells.insert(claimed_cells.end(), f.slots.begin(), f.slots.end());
      claimed_seqs.insert(claimed_seqs.end(), f.seqs.begin(), f.seqs.end());
    }
  }
  // The layer fences' timelines say the work has completed; synchronize collects any error.
  if (st.ok() && fences_) st = fences_->wait(std::chrono::minutes(5));
  const Status done = sched_->synchronize();
  if (st.ok()) st = done;
  if (pager_) {
    const Status paged = pager_->take_error();
    if (st.ok()) st = paged;
  }
  if (!st.ok()) {
    if (fences_) fences_->abandon();
    cache_->cells().release(claimed_cells, claimed_seqs);
    return st;
  }
  logits_ = std::move(out);
  return {};
}

Status Session::run_ubatch(const Batch& batch, int64_t first, int64_t T, float* logits_out,
                           InFlight& f) {
  const auto& hp = model_->hparams();
  const auto at = [first](const std::vector<int32_t>& v) {
    return std::span<const int32_t>(v).subspan(static_cast<size_t>(first));
  };
  f.tokens.assign(at(batch.tokens).begin(), at(batch.tokens).begin() + T);
  f.pos.assign(at(batch.pos).begin(), at(batch.pos).begin() + T);
  f.seqs.assign(at(batch.seq).begin(), at(batch.seq).begin() + T);
  auto cells = cache_->cells().claim(f.seqs, f.pos);
  if (!cells.ok()) return cells.status();
  f.slots = std::move(cells).value();
  // The rows whose logits are kept; a micro-batch that keeps none still computes its last row
  // (a graph needs an output) and drops it.
  for (int64_t t = 0; t < T; ++t) {
    if (batch.logits[static_cast<size_t>(first + t)] != 0) {
      f.out_ids.push_back(static_cast<int32_t>(t));
    }
  }
  f.kept = f.out_ids.size();
  if (f.out_ids.empty()) {
    f.out_ids.push_back(static_cast<int32_t>(T - 1));
    logits_out = nullptr;
  }
  const auto n_outputs = static_cast<int64_t>(f.out_ids.size());

  model::BatchShape shape{T, cache_->view_cells(), n_outputs};
  f.ctx = std::make_unique<core::Context>();
  auto g = model_->build_graph(*f.ctx, cache_->tensors(), shape, {params_.flash_attn});
  if (!f.ctx->ok()) return f.ctx->status().with_context("building the graph");
  f.graph = std::make_unique<core::Graph>(std::move(g.graph));
  STRATA_RETURN_IF_ERROR(sched_->allocate(*f.graph));

  // Causal mask: token t sees the cells of its own sequence holding a position up to its own;
  // in a sliding window, only the hp.n_swa latest of them (its own included), as llama.cpp's
  // standard window does.
  const KvCells& kv = cache_->cells();
  f.mask.resize(static_cast<size_t>(shape.n_kv * T));
  if (g.kq_mask_swa != nullptr) f.mask_swa.resize(f.mask.size());
  for (int64_t t = 0; t < T; ++t) {
    const int32_t tp = f.pos[static_cast<size_t>(t)];
    const int32_t ts = f.seqs[static_cast<size_t>(t)];
    for (int64_t c = 0; c < shape.n_kv; ++c) {
      const int32_t cp = kv.pos(c);
      const bool visible = cp >= 0 && cp <= tp && kv.has(c, ts);
      const auto i = static_cast<size_t>(t * shape.n_kv + c);
      f.mask[i] = visible ? 0.0f : -INFINITY;
      if (g.kq_mask_swa != nullptr) {
        f.mask_swa[i] = visible && tp - cp < hp.n_swa ? 0.0f : -INFINITY;
      }
    }
  }
  // Queued writes read these vectors later: they live in `f` until the run is synchronized.
  auto set = [this](core::Tensor* t, const void* data, size_t bytes) {
    return sched_->backend_of(*t).set_async(*t, data, 0, bytes);
  };
  STRATA_RETURN_IF_ERROR(set(g.tokens, f.tokens.data(), f.tokens.size() * 4));
  STRATA_RETURN_IF_ERROR(set(g.positions, f.pos.data(), f.pos.size() * 4));
  STRATA_RETURN_IF_ERROR(set(g.kv_slots, f.slots.data(), f.slots.size() * 4));
  STRATA_RETURN_IF_ERROR(set(g.kq_mask, f.mask.data(), f.mask.size() * 4));
  if (g.kq_mask_swa != nullptr) {
    STRATA_RETURN_IF_ERROR(set(g.kq_mask_swa, f.mask_swa.data(), f.mask_swa.size() * 4));
  }
  if (g.out_ids != nullptr) {
    STRATA_RETURN_IF_ERROR(set(g.out_ids, f.out_ids.data(), f.out_ids.size() * 4));
  }
  if (pager_) {
    const std::vector<paged::WaitPoint> waits = pager_->next_waits();
    const uint64_t base = fences_->arm(waits);
    // The cells written lie in [lo, hi]: the pager writes that range back (clean cells in it
    // hold what the home holds already).
    const auto [lo, hi] = std::minmax_element(f.slots.begin(), f.slots.end());
    // Posted before the graph is queued: a synchronous backend blocks in its first wait.
    pager_->post({base, *lo, *hi - *lo + 1, shape.n_kv});
  } else if (fences_) {
    fences_->arm();
  }
  STRATA_RETURN_IF_ERROR(sched_->compute_async());
  if (fences_) STRATA_RETURN_IF_ERROR(fences_->collect(pager_ ? &pager_->runs_on() : nullptr));
  if (logits_out == nullptr) return {};
  return sched_->backend_of(*g.logits).get_async(*g.logits, logits_out, 0, g.logits->nbytes());
}

Session::~Session() {
  // Queued work may wait on the pager: let it finish before the pager stops.
  if (sched_) (void)sched_->synchronize();
}

int64_t Session::n_outputs() const {
  return static_cast<int64_t>(logits_.size()) / model_->hparams().n_vocab;
}

std::span<const float> Session::logits(int64_t i) const {
  const auto nv = static_cast<size_t>(model_->hparams().n_vocab);
  if (i < 0) i += n_outputs();
  if (i < 0 || i >= n_outputs()) return {};
  return std::span<const float>(logits_).subspan(static_cast<size_t>(i) * nv, nv);
}

}  // namespace strata::engine
