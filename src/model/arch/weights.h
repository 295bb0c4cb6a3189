// The weight tensors of a model, placed in memory of a chosen buffer type, and how each one
// may be split across devices (declared by the architecture, used by tensor parallelism).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/status.h"
#include "gguf/file.h"
#include "memory/buffer.h"
#include "model/arch/hparams.h"

namespace strata::model {

/// A layer's weights. An architecture fills the ones it has; the others stay null.
struct LayerWeights {
  core::Tensor* attn_norm = nullptr;
  core::Tensor* wq = nullptr;
  core::Tensor* wk = nullptr;
  core::Tensor* wv = nullptr;
  core::Tensor* wqkv = nullptr;  ///< Q, K and V fused along the output rows (Phi-3)
  core::Tensor* bq = nullptr;    ///< projection biases (Qwen2)
  core::Tensor* bk = nullptr;
  core::Tensor* bv = nullptr;
  core::Tensor* attn_q_norm = nullptr;  ///< per-head RMS norms of Q and K (Qwen3, Gemma 3)
  core::Tensor* attn_k_norm = nullptr;
  core::Tensor* wo = nullptr;
  core::Tensor* attn_post_norm = nullptr;  ///< norm of the attention output (Gemma)
  core::Tensor* ffn_norm = nullptr;
  core::Tensor* ffn_gate = nullptr;
  core::Tensor* ffn_up = nullptr;  ///< with no ffn_gate: gate and up fused, gate first (Phi-3)
  core::Tensor* ffn_down = nullptr;
  core::Tensor* ffn_post_norm = nullptr;  ///< norm of the FFN output (Gemma)
  core::Tensor* ffn_gate_inp = nullptr;   ///< mixture of experts: the router
  core::Tensor* ffn_gate_exps = nullptr;  ///< [n_embd, n_ff, n_expert]
  core::Tensor* ffn_up_exps = nullptr;
  core::Tensor* ffn_down_exps = nullptr;
};

/// How a weight may be divided between devices that each compute a slice of its layer.
enum class SplitAxis : uint8_t {
  kMirrored,  ///< every device holds it whole (norms, biases of whole tensors, routers)
  /// By output features (a matrix's ne[1], a bias's ne[0]): Q, K, V and their biases, FFN
  /// gate and up, the output matrix.
  kRows,
  /// By input features (ne[0]): attention output and FFN down; their products are partial sums.
  kColumns,
};

struct WeightSplit {
  SplitAxis axis = SplitAxis::kMirrored;
  /// A fused tensor's parts along the axis, each split on its own (QKV: n_embd_q, n_embd_kv,
  /// n_embd_kv); empty: one part.
  std::vector<int64_t> segments;
  /// The unit a shard must keep whole along the axis (a head: head_dim); quantization blocks
  /// are respected on top of it.
  int64_t granule = 1;
};

/// Weight streaming: block layers whose weights stay at home (the model file) and are read
/// into one of a few slots of their device's memory before each use. A streamed tensor is
/// placed in its layer's slot, so layers that share a slot share addresses; whoever runs the
/// graph (engine::WeightPager) must have the right layer in a slot before its tensors are read.
struct WeightStream {
  struct Piece {
    core::Tensor* tensor = nullptr;
    uint64_t file_offset = 0;  ///< where its bytes start in the file
    size_t size = 0;
    /// Its bytes in the model's read-only mapping: memory of another process (an MPI rank)
    /// is written from there, which has the rank read its own copy of the file.
    const void* mapped = nullptr;
  };
  struct Layer {
    int64_t layer = 0;
    int slot = 0;
    size_t bytes = 0;
    std::vector<Piece> pieces;
  };
  std::string path;           ///< the home
  std::vector<Layer> layers;  ///< in layer order; empty when nothing streams
  int n_slots = 0;
  size_t slot_bytes = 0;  ///< the largest slot

  /// The streamed layer `layer`, or null when its weights are resident.
  const Layer* find(int64_t layer) const;
  /// Bytes of every streamed layer's weights (what one pass over the model reads).
  size_t bytes() const;
};

/// What happens to block layers whose weights their device cannot hold.
struct StreamOptions {
  /// Stream them instead of failing with kOutOfMemory (host memory is never streamed).
  bool enabled = false;
  /// Slots per streaming device. 0 chooses: as many layers as half of the memory left after
  /// the resident weights holds (at least 2). Set, every block layer on a device streams, even
  /// when they would fit.
  int slots = 0;
};

/// The form weights take in a host copy of their own (the huge-page copy of
/// memory::copy_to_huge_pages_pays): a layout the CPU kernels read faster than the file's
/// (cpu/weight_forms.h). Unset, every weight keeps its file type. The token embeddings always
/// do: they are read by rows.
struct HostForm {
  /// The type a weight of the file's type and this shape takes.
  std::function<core::Type(core::Type, const std::array<int64_t, 4>&)> type;
  /// Writes `rows` rows of k elements of the first type as the second.
  std::function<Status(core::Type, core::Type, const void* src, void* dst, int64_t rows, int64_t k)>
      convert;
};

/// Weight tensors (leafs flagged kFlagWeight), the buffers holding them, and per tensor the
/// layer it belongs to and its split.
struct Weights {
  core::Context ctx;
  core::Tensor* tok_embd = nullptr;
  core::Tensor* output_norm = nullptr;
  core::Tensor* output = nullptr;      ///< the same tensor as tok_embd when the file ties them
  core::Tensor* rope_freqs = nullptr;  ///< rope frequency factors (Llama 3.1), or null
  std::vector<LayerWeights> layers;
  struct Info {
    core::Tensor* tensor;
    int64_t layer;  ///< -1 input, 0..n_layer-1 blocks, n_layer output
    WeightSplit split;
  };
  std::vector<Info> info;
  std::vector<std::unique_ptr<memory::Buffer>> buffers;
  WeightStream stream;

  /// The declaration of `t`, or null when it is not a weight of this model.
  const Info* find(const core::Tensor* t) const;
};

/// Where each layer's weights go: layer -1 is the input (token embeddings), 0..n_layer-1 the
/// blocks, n_layer the output (final norm and output matrix).
using WeightPlacement = std::function<memory::BufferType&(int64_t layer)>;

/// What an architecture uses to declare its weights: each call checks the file's tensor
/// against the expected shape and records it. The first failure is kept (later calls return
/// null) and names the tensor.
class WeightLoader {
 public:
  WeightLoader(const gguf::File& file, Weights& w) : file_(file), w_(w) {}

  /// Layer the following declarations belong to.
  void at_layer(int64_t layer) { layer_ = layer; }
  /// A matrix or stacked matrices of shape `ne` (unused trailing dims 1).
  core::Tensor* require(const std::string& name, std::array<int64_t, 4> ne, WeightSplit split);
  /// The same, or null without an error when the file lacks it.
  core::Tensor* optional(const std::string& name, std::array<int64_t, 4> ne, WeightSplit split);
  /// An F32 vector of n elements (norm weights, biases, rope factors).
  core::Tensor* vector_f32(const std::string& name, int64_t n, bool required = true,
                           WeightSplit split = {});
  /// Elements per quantization block of the file's tensor `name` (1 when absent or plain).
  int64_t block_size_of(const std::string& name) const;
  /// Names of block tensors: "blk.<layer>.<what>.<kind>".
  std::string blk(const char* what, const char* kind = "weight") const;

  const Status& status() const { return status_; }

 private:
  core::Tensor* get(const std::string& name, std::array<int64_t, 4> ne, bool required,
                    bool f32_only, WeightSplit split);

  const gguf::File& file_;
  Weights& w_;
  Status status_;
  int64_t layer_ = -1;
};

/// Finds every tensor the architecture declares, checks its shape and type against `hp`,
/// and places it. The host buffer type gets a copy in huge pages where that pays
/// (memory::copy_to_huge_pages_pays) and uses the file mapping directly otherwise; every other
/// buffer type gets one allocation holding its layers, and running out of it is an error such
/// as "part:1 needs 812 MiB for 11 layers: ...". Failures name the tensor.
/// With `stream.enabled`, block layers on a device that cannot hold them are streamed
/// instead (see WeightStream); their bytes are not read here. The huge-page copy holds each
/// weight in `form` (see HostForm).
Result<std::unique_ptr<Weights>> load_weights(const gguf::File& file, const Hparams& hp,
                                              const WeightPlacement& placement,
                                              const StreamOptions& stream = {},
                                              const HostForm& form = {});

}  // namespace strata::model
