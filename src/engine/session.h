// A session: one model on one backend with its KV cache; evaluates tokens, keeps logits.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/device.h"
#include "core/status.h"
#include "engine/kv_cache.h"
#include "engine/kv_pager.h"
#include "engine/layer_fences.h"
#include "engine/layout.h"
#include "engine/weight_pager.h"
#include "model/model.h"
#include "sched/scheduler.h"

namespace strata::engine {

/// The order in which a prompt of several micro-batches meets the layers.
enum class PrefillOrder {
  kAuto,    ///< banded when weights stream (and nothing rules it out), token-major otherwise
  kToken,   ///< each micro-batch through every layer before the next
  kBanded,  ///< every micro-batch through a band of layers before the next band
};

struct SessionParams {
  int64_t n_ctx = 0;       ///< context size; 0 means the model's training context
  int64_t n_batch = 2048;  ///< most tokens one decode() call takes
  int64_t n_ubatch = 512;  ///< tokens per graph run (micro-batch)
  int n_threads = 1;
  /// Queue consecutive micro-batches without waiting, so devices of a layer split overlap.
  bool pipeline = true;
  core::Type type_k = core::Type::kF16;
  /// A quantized V cache (q8_0) needs flash_attn: the unfused path reads V transposed.
  core::Type type_v = core::Type::kF16;
  /// Fused attention (core::flash_attn). Off by default: llama.cpp's golden outputs come from
  /// the unfused path, which rounds the attention probabilities to the V cache's type.
  bool flash_attn = false;
  /// Run every micro-batch through the paged path (paged::PagedBackend on every backend), cut
  /// after every layer, each cut signalling a timeline the session waits on. Same results.
  bool paged = false;
  /// KV paging (implies `paged`): only part of the KV cache is resident, the rest lives in a
  /// home tier and a pager moves layers in and out while compute runs.
  KvPagingConfig kv_paging;
  /// Prefill order (kBanded implies `paged`).
  PrefillOrder prefill = PrefillOrder::kAuto;
  /// Layers per band; 0: as many as half the weight slots hold when weights stream (so the
  /// next band is read while one runs), else every layer.
  int64_t band_layers = 0;
};

/// Tokens of any sequences evaluated together (continuous batching): each with its sequence
/// id (0..KvCells::kMaxSeqs-1), its position in that sequence, and whether its logits are kept.
struct Batch {
  std::vector<int32_t> tokens, pos, seq;
  std::vector<uint8_t> logits;  ///< nonzero: keep this token's logits

  void add(int32_t token, int32_t position, int32_t sequence, bool keep_logits);
  void clear();
  size_t size() const { return tokens.size(); }
};

/// Where a layout puts each layer's weights, for model::Model::load.
model::WeightPlacement weight_placement(const Layout& layout, backend::Device& host);

class Session {
 public:
  /// Creates the backend, the KV cache and a compute buffer sized for the largest micro-batch,
  /// everything on `device`.
  static Result<std::unique_ptr<Session>> create(const model::Model& model, backend::Device& device,
                                                 const SessionParams& params);
  /// Same across devices: `host` runs what the layout keeps on the host (and anything a device
  /// cannot run); each layer's KV cache goes where the layout says. The model's weights must
  /// have been loaded with the same layout (see weight_placement).
  static Result<std::unique_ptr<Session>> create(const model::Model& model, backend::Device& host,
                                                 const Layout& layout, const SessionParams& params);

  /// Evaluates `tokens` at the next positions, micro-batch by micro-batch. Keeps the logits
  /// of every token when `all_logits`, else only of the last. On error (context overflow,
  /// out of memory) the session is left as it was before the call.
  Status decode(std::span<const int32_t> tokens, bool all_logits = false);
  /// Evaluates a batch mixing sequences, micro-batch by micro-batch; each token sees its own
  /// sequence's cached tokens up to its position. The kept rows of logits() follow the
  /// batch's order. A sequence's results do not depend on what else is in the batch or the
  /// cache (see KvCells). On error the cache is left as it was before the call.
  Status decode(const Batch& batch);

  /// Logits of the i-th kept row of the last decode(); i = -1 is the last row.
  std::span<const float> logits(int64_t i = -1) const;
  int64_t n_outputs() const;
  /// Tokens sequence 0 holds (the next position decode(tokens) uses).
  int64_t n_past() const { return cache_->cells().seq_pos_max(0) + 1; }
  int64_t n_ctx() const { return cache_->size(); }
  int64_t n_batch() const { return params_.n_batch; }
  /// Forgets every token (the cache is emptied).
  void reset() { cache_->clear(); }
  /// The cache's cells by sequence: remove, keep or share a sequence's positions
  /// (seq_rm, seq_keep, seq_cp), its largest position, free cells.
  KvCells& kv_cells() { return cache_->cells(); }
  const model::Model& model() const { return *model_; }
  const KvCache& cache() const { return *cache_; }
  size_t compute_buffer_bytes() const { return sched_->compute_buffer_bytes(); }
  sched::Scheduler& scheduler() { return *sched_; }
  /// The layer fences of a paged session (null otherwise).
  const LayerFences* layer_fences() const { return fences_.get(); }
  /// The slots and home of a paged KV cache (null without paging). Between decode() calls
  /// nothing else touches them, so a caller may inspect them or put another home in place.
  KvPaging* kv_paging() { return cache_->paging(); }
  /// What KV paging moved so far (zeros without paging).
  KvPagingStats kv_paging_stats() const { return pager_ ? pager_->stats() : KvPagingStats{}; }
  /// What weight streaming read so far (zeros when nothing streams).
  WeightStreamingStats weight_stats() const {
    return weight_pager_ ? weight_pager_->stats() : WeightStreamingStats{};
  }
  /// Layers per band of a banded prefill; 0 when prompts prefill token-major.
  int64_t band_layers() const { return band_layers_; }
  ~Session();

 private:
  Session() = default;
  // What a queued micro-batch needs kept alive until the backends are synchronized.
  static Result<std::unique_ptr<Session>> create_unguarded(const model::Model& model,
                                                           backend::Device& host,
                                                           const Layout& layout,
                                                           const SessionParams& params);
  Status decode_sequence(std::span<const int32_t> tokens, bool all_logits);
  struct InFlight {
    std::unique_ptr<core::Context> ctx;
    std::unique_ptr<core::Graph> graph;
    model::ModelGraph io;  ///< the graph's inputs and logits (its `graph` member unused)
    size_t row = 0;        ///< where its kept rows go in the call's logits
    int64_t n_kv = 0;      ///< cache cells its attention reads
    std::vector<int32_t> tokens, pos, seqs, slots;
    std::vector<float> mask;
    std::vector<float> mask_swa;  ///< sliding-window layers' mask, when the model has them
    std::vector<int32_t> out_ids;
    size_t kept = 0;  ///< rows of logits kept (out_ids may hold one dropped row)
  };
  // Claims cells for tokens [first, first + n) of `batch` and builds their graph and mask.
  Status prepare_ubatch(const Batch& batch, int64_t first, int64_t n, InFlight& f);
  // Queues a prepared micro-batch's run over layers [first, last] (all of them: the whole
  // graph; fewer: an encode window, the band's input blitted in from `stash` unless it starts
  // at layer 0, its output out to `stash` unless it ends at the last layer). With logits_out,
  // the kept rows' logits are read there.
  Status launch(InFlight& f, int64_t first, int64_t last, core::Tensor* stash, float* logits_out);
  // Sets every backend's encode window for a run of the band [first, last].
  void set_band_windows(int64_t first, int64_t last, core::Tensor* stash);
  // Decides the prefill order and the bands (create's last step).
  Status plan_prefill(const SessionParams& asked, bool kv_offload);
  // The stash tensors of a banded prefill: one per micro-batch, shaped like its layer output.
  Status make_stash(const Batch& batch, core::Context& ctx, std::vector<core::Tensor*>& stash,
                    std::unique_ptr<memory::Buffer>& buffer);

  const model::Model* model_ = nullptr;
  SessionParams params_;
  std::vector<std::unique_ptr<backend::Backend>> backends_;  // devices first, host last
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<LayerFences> fences_;  // with params.paged
  std::unique_ptr<sched::Scheduler> sched_;
  std::unique_ptr<backend::Event> admit_;         // the pager's admissions (a host event)
  std::unique_ptr<KvPager> pager_;                // with params.kv_paging
  std::unique_ptr<backend::Event> weight_admit_;  // the weight pager's admissions
  std::unique_ptr<WeightPager> weight_pager_;     // when the model streams weights
  bool holds_stream_ = false;                     // this session holds the model's slots
  std::vector<int> runs_on_;                      // per layer: the backend that runs it
  int output_runs_on_ = 0;                        // the backend that runs the output
  std::string logits_name_;                       // the name of the graph's logits node
  int64_t band_layers_ = 0;                       // 0: token-major prefill
  bool windowed_ = false;                         // an encode window is set on the paged backends
  std::vector<float> logits_;
};

}  // namespace strata::engine
