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
  const bool streams = !model.weights().stream.layers.empty();
  if (streams || p.prefill == PrefillOrder::kBanded) p.paged = true;
  if (p.band_layers < 0) return invalid("--band-layers must not be negative");
  if (core::is_quantized(p.type_v) && !p.flash_attn) {
    return invalid("a " + std::string(core::type_name(p.type_v)) +
                   " V cache needs flash attention (-fa): the unfused path reads V transposed");
  }

  std::unique_ptr<Session> s(new Session());
  s->model_ = &model;
  s->params_ = p;
  if (streams) {
    if (!model.acquire_stream()) {
      return invalid(
          "this model streams its weights and another session is using them: "
          "streamed weights serve one session at a time");
    }
    s->holds_stream_ = true;
  }
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
  if (p.paged) {
    // A layer's output is computed with its weights: on its device (devices first in the
    // session's backends, the host last). LayerFences::collect checks it every micro-batch.
    const int host_index = static_cast<int>(s->backends_.size()) - 1;
    for (int64_t l = 0; l <= hp.n_layer; ++l) {
      const int d = l < static_cast<int64_t>(layout.layer_device.size())
                        ? layout.layer_device[static_cast<size_t>(l)]
                    : l == hp.n_layer ? layout.output_device
                                      : -1;
      s->runs_on_.push_back(d < 0 ? host_index : d);
    }
    s->output_runs_on_ = s->runs_on_[static_cast<size_t>(hp.n_layer)];
    s->runs_on_.pop_back();
  }
  if (KvPaging* paging = s->cache_->paging()) {
    auto admit = host.make_event();
    if (!admit.ok()) return admit.status();
    s->admit_ = std::move(admit).value();
    s->pager_ = std::make_unique<KvPager>(*paging, hp.n_layer, s->fences_->events(), s->runs_on_,
                                          *s->admit_);
  }
  if (streams) {
    auto admit = host.make_event();
    if (!admit.ok()) return admit.status();
    s->weight_admit_ = std::move(admit).value();
    auto pager = WeightPager::create(model.weights().stream, s->fences_->events(), s->runs_on_,
                                     *s->weight_admit_);
    if (!pager.ok()) return pager.status();
    s->weight_pager_ = std::move(pager).value();
  }
  STRATA_RETURN_IF_ERROR(s->plan_prefill(p, layout.kv_offload));

  // Size the compute buffers once, for the largest micro-batch over a full cache.
  core::Context ctx;
  const int64_t n = std::min(p.n_ubatch, p.n_ctx);
  auto g = model.build_graph(ctx, s->cache_->tensors(), {n, p.n_ctx, n}, {p.flash_attn});
  if (!ctx.ok()) return ctx.status().with_context("building the graph");
  s->logits_name_ = g.logits->name;
  STRATA_RETURN_IF_ERROR(s->sched_->reserve(g.graph));
  return s;
}

Status Session::plan_prefill(const SessionParams& asked, bool kv_offload) {
  const int64_t n_layer = model_->hparams().n_layer;
  // With the KV cache on the host, a device's layer runs in several pieces (its attention on
  // the host), which a band's encode window cannot cover.
  const int host = static_cast<int>(backends_.size()) - 1;
  const bool layers_split_from_cache = !kv_offload && std::any_of(runs_on_.begin(), runs_on_.end(),
                                                                  [&](int d) { return d != host; });
  if (asked.prefill == PrefillOrder::kBanded && layers_split_from_cache) {
    return invalid(
        "--prefill banded does not work with --no-kv-offload on devices "
        "(use --prefill token)");
  }
  const bool banded =
      asked.prefill == PrefillOrder::kBanded ||
      (asked.prefill == PrefillOrder::kAuto && weight_pager_ && !layers_split_from_cache);
  if (!banded) return {};
  // By default a band fills half the slots of the device with the fewest, so the next band is
  // read while one runs.
  int64_t band = n_layer;
  const model::WeightStream& ws = model_->weights().stream;
  for (size_t b = 0; b < backends_.size(); ++b) {
    std::vector<int> slots;
    for (const model::WeightStream::Layer& l : ws.layers) {
      if (runs_on_[static_cast<size_t>(l.layer)] == static_cast<int>(b)) slots.push_back(l.slot);
    }
    std::sort(slots.begin(), slots.end());
    const auto n = std::unique(slots.begin(), slots.end()) - slots.begin();
    if (n > 0) band = std::min<int64_t>(band, std::max<int64_t>(1, n / 2));
  }
  band_layers_ = std::min(asked.band_layers > 0 ? asked.band_layers : band, n_layer);
  return {};
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
  const int64_t n_layer = model_->hparams().n_layer;
  // Banded: every micro-batch passes through a band of layers before the next band runs, its
  // layer output carried to the next band in a stash.
  const bool banded = band_layers_ > 0 && band_layers_ < n_layer && n > params_.n_ubatch;
  const int64_t first_band_last = banded ? band_layers_ - 1 : n_layer - 1;
  std::vector<float> out;
  std::vector<int32_t> claimed_cells, claimed_seqs;  // undone if the call fails
  // Declared before the work that reads them: queued copies use the stash until synchronized.
  core::Context stash_ctx;
  std::vector<core::Tensor*> stash;
  std::unique_ptr<memory::Buffer> stash_buffer;
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
    if (banded) st = make_stash(batch, stash_ctx, stash, stash_buffer);
    auto logits_of = [&](const InFlight& f, int64_t last) {
      return last == n_layer - 1 && f.kept > 0 ? out.data() + f.row * n_vocab_sz : nullptr;
    };
    size_t row = 0;
    for (int64_t i = 0; i < n && st.ok(); i += params_.n_ubatch) {
      const int64_t len = std::min(params_.n_ubatch, n - i);
      InFlight& f = in_flight.emplace_back();
      recorded = false;
      st = prepare_ubatch(batch, i, len, f);
      claimed_cells.insert(claimed_cells.end(), f.slots.begin(), f.slots.end());
      claimed_seqs.insert(claimed_seqs.end(), f.seqs.begin(), f.seqs.end());
      recorded = true;
      f.row = row;
      row += f.kept;
      if (st.ok()) {
        core::Tensor* to = banded ? stash[in_flight.size() - 1] : nullptr;
        st = launch(f, 0, first_band_last, to, logits_of(f, first_band_last));
      }
      // Without pipelining each micro-batch completes before the next is queued.
      if (st.ok() && !params_.pipeline) {
        st = sched_->synchronize();
        if (!banded) in_flight.clear();
      }
    }
    for (int64_t first = first_band_last + 1; st.ok() && first < n_layer; first += band_layers_) {
      const int64_t last = std::min(first + band_layers_, n_layer) - 1;
      for (size_t u = 0; u < in_flight.size() && st.ok(); ++u) {
        st = launch(in_flight[u], first, last, stash[u], logits_of(in_flight[u], last));
        if (st.ok() && !params_.pipeline) st = sched_->synchronize();
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
  for (Status paged : {pager_ ? pager_->take_error() : Status(),
                       weight_pager_ ? weight_pager_->take_error() : Status()}) {
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

Status Session::make_stash(const Batch& batch, core::Context& ctx,
                           std::vector<core::Tensor*>& stash,
                           std::unique_ptr<memory::Buffer>& buffer) {
  const int64_t n_embd = model_->hparams().n_embd;
  const auto n = static_cast<int64_t>(batch.size());
  for (int64_t i = 0; i < n; i += params_.n_ubatch) {
    const int64_t len = std::min(params_.n_ubatch, n - i);
    stash.push_back(ctx.new_tensor(core::Type::kF32, {n_embd, len, 1, 1}, "band stash"));
  }
  if (!ctx.ok()) return ctx.status();
  // With the layers, so the blits copy within the device.
  memory::BufferType& type =
      backends_[static_cast<size_t>(runs_on_.front())]->device().buffer_type();
  const size_t align = type.alignment();
  size_t bytes = 0;
  for (const core::Tensor* t : stash) bytes += (t->nbytes() + align - 1) / align * align;
  auto buf = type.allocate(bytes);
  if (!buf.ok()) return buf.status().with_context("banded prefill's stash");
  size_t offset = 0;
  for (core::Tensor* t : stash) {
    STRATA_RETURN_IF_ERROR((*buf)->place(*t, offset));
    offset += (t->nbytes() + align - 1) / align * align;
  }
  buffer = std::move(buf).value();
  return {};
}

Status Session::prepare_ubatch(const Batch& batch, int64_t first, int64_t T, InFlight& f) {
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
  if (f.out_ids.empty()) f.out_ids.push_back(static_cast<int32_t>(T - 1));
  const auto n_outputs = static_cast<int64_t>(f.out_ids.size());

  model::BatchShape shape{T, cache_->view_cells(), n_outputs};
  f.n_kv = shape.n_kv;
  f.ctx = std::make_unique<core::Context>();
  f.io = model_->build_graph(*f.ctx, cache_->tensors(), shape, {params_.flash_attn});
  if (!f.ctx->ok()) return f.ctx->status().with_context("building the graph");
  f.graph = std::make_unique<core::Graph>(std::move(f.io.graph));

  // Causal mask: token t sees the cells of its own sequence holding a position up to its own;
  // in a sliding window, only the hp.n_swa latest of them (its own included), as llama.cpp's
  // standard window does.
  const KvCells& kv = cache_->cells();
  f.mask.resize(static_cast<size_t>(shape.n_kv * T));
  if (f.io.kq_mask_swa != nullptr) f.mask_swa.resize(f.mask.size());
  for (int64_t t = 0; t < T; ++t) {
    const int32_t tp = f.pos[static_cast<size_t>(t)];
    const int32_t ts = f.seqs[static_cast<size_t>(t)];
    for (int64_t c = 0; c < shape.n_kv; ++c) {
      const int32_t cp = kv.pos(c);
      const bool visible = cp >= 0 && cp <= tp && kv.has(c, ts);
      const auto i = static_cast<size_t>(t * shape.n_kv + c);
      f.mask[i] = visible ? 0.0f : -INFINITY;
      if (f.io.kq_mask_swa != nullptr) {
        f.mask_swa[i] = visible && tp - cp < hp.n_swa ? 0.0f : -INFINITY;
      }
    }
  }
  return {};
}

// Each backend runs its part of the band [first, last]: the band's first device gets the
// band's input from the stash (into the previous layer's output, or into its copy of it when
// that layer runs elsewhere), its last device puts the band's output there, and devices in
// between pass activations on as in a whole run. The host runs whole when it holds what the
// band needs beyond layers (the embeddings of the first band, the output of the last); a
// device with nothing to do in the band is idle.
void Session::set_band_windows(int64_t first, int64_t last, core::Tensor* stash) {
  const int64_t n_layer = model_->hparams().n_layer;
  const auto name = [](const char* what, int64_t l) {
    return "blk." + std::to_string(l) + "." + what;
  };
  const int host = static_cast<int>(backends_.size()) - 1;
  for (int b = 0; b <= host; ++b) {
    int64_t lo = -1, hi = -1;
    for (int64_t l = first; l <= last; ++l) {
      if (runs_on_[static_cast<size_t>(l)] != b) continue;
      if (lo < 0) lo = l;
      hi = l;
    }
    paged::EncodeWindow w;
    if (lo >= 0) {
      w.first = name("attn_norm", lo);
      const bool output_here = hi == n_layer - 1 && output_runs_on_ == b;
      w.last = output_here ? logits_name_ : name("l_out", hi);
      if (lo == first && first > 0) {
        const bool here = runs_on_[static_cast<size_t>(first - 1)] == b;
        w.blits_in.push_back({name("l_out", first - 1) + (here ? "" : "#copy"), stash});
      }
      if (hi == last && last < n_layer - 1) w.blits_out.push_back({name("l_out", last), stash});
    } else if (b == host && first == 0) {
      // Whole: the embeddings (a host with layers would hold layer 0, so it holds none).
    } else if (b == host && last == n_layer - 1 && output_runs_on_ == host) {
      w.first = "result_norm";  // the output alone, not the host's layers (finish_graph)
      w.last = logits_name_;
      w.only_this_graph = true;
    } else {
      w.idle = true;
    }
    fences_->set_window(static_cast<size_t>(b), std::move(w));
  }
}

Status Session::launch(InFlight& f, int64_t first, int64_t last, core::Tensor* stash,
                       float* logits_out) {
  const model::ModelGraph& g = f.io;
  const int64_t n_layer = model_->hparams().n_layer;
  STRATA_RETURN_IF_ERROR(sched_->allocate(*f.graph));
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
  if (fences_) {
    const bool whole = first == 0 && last == n_layer - 1;
    if (!whole) {
      set_band_windows(first, last, stash);
      windowed_ = true;
    } else if (windowed_) {
      fences_->set_window({});
      windowed_ = false;
    }
    std::vector<paged::WaitPoint> waits;
    if (pager_) waits = pager_->next_waits(first, last);
    if (weight_pager_) {
      const std::vector<paged::WaitPoint> w = weight_pager_->next_waits(first, last);
      waits.insert(waits.end(), w.begin(), w.end());
    }
    const uint64_t base = fences_->arm(waits, first, last);
    if (pager_) {
      // The cells written lie in [lo, hi]: the pager writes that range back (clean cells in it
      // hold what the home holds already). Posted before the graph is queued: a synchronous
      // backend blocks in its first wait.
      const auto [lo, hi] = std::minmax_element(f.slots.begin(), f.slots.end());
      pager_->post({base, *lo, *hi - *lo + 1, f.n_kv, first, last});
    }
    if (weight_pager_) weight_pager_->post(first, last, base);
  }
  STRATA_RETURN_IF_ERROR(sched_->compute_async());
  if (fences_) STRATA_RETURN_IF_ERROR(fences_->collect(&runs_on_));
  if (logits_out == nullptr) return {};
  return sched_->backend_of(*g.logits).get_async(*g.logits, logits_out, 0, g.logits->nbytes());
}

Session::~Session() {
  // Queued work may wait on the pagers: let it finish before they stop.
  if (sched_) (void)sched_->synchronize();
  weight_pager_.reset();
  if (holds_stream_) model_->release_stream();
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
