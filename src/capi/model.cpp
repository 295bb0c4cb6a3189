// Models and text: strata_model_* and strata_tokenize / token_to_piece / detokenize.
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "capi/handles.h"
#include "devices/host_device.h"

namespace strata::capi {
namespace {

constexpr int32_t kMaxThreads = 1024;
constexpr int32_t kMaxPartitions = 256;

// No default case: a new mode must be handled here, and a value no enumerator names (a C
// caller may pass any int) falls through to the error.
Result<engine::SplitMode> split_mode(strata_split_mode mode) {
  switch (mode) {
    case STRATA_SPLIT_NONE:
      return engine::SplitMode::kNone;
    case STRATA_SPLIT_LAYER:
      return engine::SplitMode::kLayer;
    case STRATA_SPLIT_TENSOR:
      return engine::SplitMode::kTensor;
  }
  return error(ErrorCode::kInvalidArgument,
               "strata_model_open: unknown split_mode " + std::to_string(static_cast<int>(mode)));
}

Result<engine::OpenParams> open_params(const strata_model_params& p) {
  const auto bad = [](const std::string& what) {
    return error(ErrorCode::kInvalidArgument, "strata_model_open: " + what);
  };
  if (p.n_threads < 0 || p.n_threads > kMaxThreads) return bad("n_threads must be in [0, 1024]");
  if (p.n_partitions < 0 || p.n_partitions > kMaxPartitions)
    return bad("n_partitions must be in [0, 256]");
  if (p.n_gpu_layers < 0) return bad("n_gpu_layers must not be negative");
  if (p.n_tensor_split > 0 && p.tensor_split == nullptr)
    return bad("tensor_split is NULL but n_tensor_split is " + std::to_string(p.n_tensor_split));
  if (p.n_tensor_split > static_cast<size_t>(kMaxPartitions))
    return bad("n_tensor_split must be at most 256");
  engine::OpenParams o;
  auto mode = split_mode(p.split_mode);
  if (!mode.ok()) return mode.status();
  o.split_mode = *mode;
  if (p.devices != nullptr) o.devices = p.devices;
  o.partitions = p.n_partitions;
  o.device_mem = p.device_mem_bytes;
  o.n_gpu_layers = p.n_gpu_layers;
  if (p.n_tensor_split > 0) {
    o.tensor_split.assign(p.tensor_split, p.tensor_split + p.n_tensor_split);
    float total = 0.0f;
    for (float f : o.tensor_split) {
      if (!(f >= 0.0f && f <= 1e6f)) return bad("tensor_split entries must be in [0, 1e6]");
      total += f;
    }
    if (total <= 0.0f) return bad("tensor_split entries are all zero");
  }
  o.kv_offload = p.kv_offload;
  o.pipeline = p.pipeline;
  o.paged = p.paged;
  o.kv_paging.resident_bytes = p.kv_resident_bytes;
  if (p.kv_home_file != nullptr && p.kv_home_file[0] != '\0') {
    if (p.kv_resident_bytes == 0) return bad("kv_home_file needs kv_resident_bytes");
    o.kv_paging.home_file = p.kv_home_file;
  }
  o.stream_weights = p.stream_weights;
  o.mem_budget = p.mem_budget_bytes;
  return o;
}

// Copies `text` and its NUL into `buf` when they fit; the length goes out either way.
strata_status write_text(const std::string& text, char* buf, size_t capacity, size_t* n_bytes,
                         const char* function) {
  *n_bytes = text.size();
  if (text.size() + 1 > capacity) {
    return fail(STRATA_ERR_BUFFER_TOO_SMALL, function,
                "the text needs " + std::to_string(text.size() + 1) +
                    " bytes with its NUL, the buffer has " + std::to_string(capacity));
  }
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  return STRATA_OK;
}

}  // namespace
}  // namespace strata::capi

using strata::capi::fail;
using strata::capi::from;
using strata::capi::guarded;

extern "C" {

strata_status strata_model_params_init(strata_model_params* params) {
  if (params == nullptr)
    return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_model_params_init", "params is NULL");
  *params = strata_model_params{};
  params->split_mode = STRATA_SPLIT_LAYER;
  params->kv_offload = true;
  params->pipeline = true;
  return STRATA_OK;
}

strata_status strata_model_open(const char* path, const strata_model_params* params,
                                strata_model** model) {
  return guarded("strata_model_open", [&] {
    if (model == nullptr)
      return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_model_open", "model is NULL");
    if (path == nullptr)
      return fail(STRATA_ERR_INVALID_ARGUMENT, "strata_model_open", "path is NULL");
    strata_model_params p;
    (void)strata_model_params_init(&p);
    if (params != nullptr) p = *params;
    auto o = strata::capi::open_params(p);
    if (!o.ok()) return from(o.status());
    auto opened = strata::engine::open_model(path, *o);
    if (!opened.ok()) return from(opened.status());
    auto handle = std::make_unique<strata_model>();
    handle->opened = std::move(opened).value();
    handle->n_threads = p.n_threads > 0 ? p.n_threads : strata::devices::available_cores();
    *model = handle.release();
    return STRATA_OK;
  });
}

void strata_model_free(strata_model* model) {
  delete model;
}

int32_t strata_model_n_vocab(const strata_model* model) {
  return model != nullptr ? model->opened.model->tokenizer().n_vocab() : -1;
}

int64_t strata_model_n_ctx_train(const strata_model* model) {
  return model != nullptr ? model->opened.model->hparams().n_ctx_train : -1;
}

int32_t strata_token_bos(const strata_model* model) {
  return model != nullptr ? model->opened.model->tokenizer().bos_id() : -1;
}

int32_t strata_token_eos(const strata_model* model) {
  return model != nullptr ? model->opened.model->tokenizer().eos_id() : -1;
}

bool strata_token_is_eog(const strata_model* model, int32_t token) {
  return model != nullptr && model->opened.model->tokenizer().is_eog(token);
}

strata_status strata_tokenize(const strata_model* model, const char* text, size_t text_len,
                              bool add_bos, bool parse_special, int32_t* tokens, size_t capacity,
                              size_t* n_tokens) {
  return guarded("strata_tokenize", [&] {
    const char* fn = "strata_tokenize";
    if (model == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "model is NULL");
    if (n_tokens == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "n_tokens is NULL");
    if (text == nullptr && text_len > 0)
      return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "text is NULL");
    if (tokens == nullptr && capacity > 0)
      return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "tokens is NULL");
    const std::string_view view =
        text_len > 0 ? std::string_view(text, text_len) : std::string_view();
    const std::vector<int32_t> ids =
        model->opened.model->tokenizer().encode(view, add_bos, parse_special);
    *n_tokens = ids.size();
    if (ids.size() > capacity) {
      return fail(STRATA_ERR_BUFFER_TOO_SMALL, fn,
                  "the text is " + std::to_string(ids.size()) + " tokens, the buffer holds " +
                      std::to_string(capacity));
    }
    std::copy(ids.begin(), ids.end(), tokens);
    return STRATA_OK;
  });
}

strata_status strata_token_to_piece(const strata_model* model, int32_t token, bool render_special,
                                    char* buf, size_t capacity, size_t* n_bytes) {
  return guarded("strata_token_to_piece", [&] {
    const char* fn = "strata_token_to_piece";
    if (model == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "model is NULL");
    if (n_bytes == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "n_bytes is NULL");
    if (buf == nullptr && capacity > 0) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "buf is NULL");
    const auto& tok = model->opened.model->tokenizer();
    if (token < 0 || token >= tok.n_vocab()) {
      return fail(STRATA_ERR_OUT_OF_RANGE, fn,
                  "token id " + std::to_string(token) + " is outside the vocabulary of " +
                      std::to_string(tok.n_vocab()));
    }
    return strata::capi::write_text(tok.token_to_piece(token, render_special), buf, capacity,
                                    n_bytes, fn);
  });
}

strata_status strata_detokenize(const strata_model* model, const int32_t* tokens, size_t n,
                                bool strip_leading_space, bool render_special, char* buf,
                                size_t capacity, size_t* n_bytes) {
  return guarded("strata_detokenize", [&] {
    const char* fn = "strata_detokenize";
    if (model == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "model is NULL");
    if (n_bytes == nullptr) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "n_bytes is NULL");
    if (tokens == nullptr && n > 0) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "tokens is NULL");
    if (buf == nullptr && capacity > 0) return fail(STRATA_ERR_INVALID_ARGUMENT, fn, "buf is NULL");
    const auto& tok = model->opened.model->tokenizer();
    for (size_t i = 0; i < n; ++i) {
      if (tokens[i] < 0 || tokens[i] >= tok.n_vocab()) {
        return fail(STRATA_ERR_OUT_OF_RANGE, fn,
                    "token id " + std::to_string(tokens[i]) + " is outside the vocabulary of " +
                        std::to_string(tok.n_vocab()));
      }
    }
    const std::span<const int32_t> ids(tokens, n);
    return strata::capi::write_text(tok.decode(ids, strip_leading_space, render_special), buf,
                                    capacity, n_bytes, fn);
  });
}

}  // extern "C"
