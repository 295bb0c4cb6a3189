// The KV-cache and attention flags shared by run and bench: -ctk, -ctv, -fa.
#pragma once

#include <string>

#include "core/status.h"
#include "engine/session.h"
#include "tools/flags.h"

namespace strata::tools {

struct AttentionOptions {
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  bool flash_attn = false;
};

void add_attention_flags(FlagSet& flags, AttentionOptions& o);

/// Checks the cache types (f32, f16, bf16, q8_0; a q8_0 V cache needs -fa) and sets them and
/// flash attention on `params`.
Status apply_attention_flags(const AttentionOptions& o, engine::SessionParams& params);

}  // namespace strata::tools
