#include "tools/attention_flags.h"

namespace strata::tools {
namespace {

Result<core::Type> cache_type(const char* flag, const std::string& name, bool allow_quantized) {
  auto t = core::type_from_name(name);
  if (!t || (*t != core::Type::kF32 && *t != core::Type::kF16 && *t != core::Type::kBF16 &&
             *t != core::Type::kQ8_0)) {
    return error(ErrorCode::kInvalidArgument,
                 std::string(flag) + ": unsupported cache type '" + name + "'");
  }
  if (*t == core::Type::kQ8_0 && !allow_quantized) {
    return error(ErrorCode::kInvalidArgument,
                 std::string(flag) + ": a q8_0 V cache needs flash attention (-fa)");
  }
  return *t;
}

}  // namespace

void add_attention_flags(FlagSet& f, AttentionOptions& o) {
  f.add_string({"-ctk", "--cache-type-k"}, &o.cache_type_k,
               "K cache type: f32, f16, bf16, q8_0 (f16)");
  f.add_string({"-ctv", "--cache-type-v"}, &o.cache_type_v,
               "V cache type: f32, f16, bf16; q8_0 with -fa (f16)");
  f.add_bool({"-fa", "--flash-attn"}, &o.flash_attn,
             "fused attention: online softmax, no score matrix");
}

Status apply_attention_flags(const AttentionOptions& o, engine::SessionParams& params) {
  auto k = cache_type("--cache-type-k", o.cache_type_k, true);
  if (!k.ok()) return k.status();
  auto v = cache_type("--cache-type-v", o.cache_type_v, o.flash_attn);
  if (!v.ok()) return v.status();
  params.type_k = *k;
  params.type_v = *v;
  params.flash_attn = o.flash_attn;
  return {};
}

}  // namespace strata::tools
