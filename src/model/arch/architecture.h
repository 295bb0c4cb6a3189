// An architecture: what it reads from the GGUF metadata, which weights it has (and how each
// splits), and its graph. The engine, the scheduler, paging and tensor parallelism see only
// this interface; nothing below the model layer knows one architecture from another.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/status.h"
#include "gguf/file.h"
#include "model/arch/graph.h"
#include "model/arch/hparams.h"
#include "model/arch/weights.h"

namespace strata::model {

struct Architecture {
  std::string_view name;  ///< general.architecture
  /// Reads the architecture's own keys and sets its fixed traits (rope mode, sliding-window
  /// layers, scales), after the keys every architecture shares have been read into `hp`.
  Status (*configure)(const gguf::File& file, Hparams& hp);
  /// Declares every block weight (token embeddings and the output layer are declared for all).
  void (*declare_weights)(WeightLoader& loader, const Hparams& hp, Weights& w);
  /// Builds the graph of one micro-batch (pure metadata; check ctx.status() afterwards).
  ModelGraph (*build_graph)(core::Context& ctx, const Hparams& hp, const Weights& w,
                            const KvCacheTensors& kv, const BatchShape& shape,
                            const GraphOptions& options);
};

/// The architecture named `name`, or null.
const Architecture* find_architecture(std::string_view name);
/// Every supported name, for error messages and `strata --help`.
std::vector<std::string_view> architecture_names();

}  // namespace strata::model
