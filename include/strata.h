/* strata's C API: open a GGUF model with a device layout, create a context over it,
 * tokenize, decode, read logits and sample.
 *
 * Conventions: every fallible function returns a strata_status; on an error it leaves its
 * outputs untouched (unless said otherwise) and strata_last_error() describes what failed.
 * Null pointers and bad sizes are errors, never crashes. No C++ exception escapes. Handles
 * are not thread-safe: use one from one thread at a time; distinct handles are independent,
 * and a model may serve several contexts. C99. */
#ifndef STRATA_H
#define STRATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define STRATA_API __attribute__((visibility("default")))
#else
#define STRATA_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_VERSION_MAJOR 0
#define STRATA_VERSION_MINOR 1
#define STRATA_VERSION_PATCH 0

/** Outcome of a call. The numbering is stable: new codes are only appended. */
typedef enum strata_status {
  STRATA_OK = 0,
  STRATA_ERR_INVALID_ARGUMENT = 1, /**< a null pointer, bad size or bad parameter */
  STRATA_ERR_NOT_FOUND = 2,        /**< a missing file, tensor or key */
  STRATA_ERR_IO = 3,               /**< the OS refused a read, write or map */
  STRATA_ERR_MALFORMED = 4,        /**< a corrupt or hostile model file */
  STRATA_ERR_UNSUPPORTED = 5,      /**< valid input this build cannot run */
  STRATA_ERR_OUT_OF_MEMORY = 6,    /**< an allocation or a device memory budget failed */
  STRATA_ERR_OUT_OF_RANGE = 7,     /**< context overflow, a logits row that is not there */
  STRATA_ERR_INTERNAL = 8,         /**< a broken invariant, reported instead of crashing */
  STRATA_ERR_BUFFER_TOO_SMALL = 9  /**< the caller's buffer is too small; the size is given */
} strata_status;

/** How offloaded layers are spread over the devices (llama.cpp's -sm). */
typedef enum strata_split_mode {
  STRATA_SPLIT_NONE = 0,  /**< everything offloaded goes to the first device */
  STRATA_SPLIT_LAYER = 1, /**< whole layers per device, in tensor_split proportions */
  STRATA_SPLIT_TENSOR = 2 /**< every offloaded layer split across the devices (a meta device),
                             in tensor_split proportions; one device runs as NONE */
} strata_split_mode;

/** Element type of the KV cache. */
typedef enum strata_cache_type {
  STRATA_CACHE_F32 = 0,
  STRATA_CACHE_F16 = 1,
  STRATA_CACHE_BF16 = 2,
  STRATA_CACHE_Q8_0 = 3 /**< as a V cache it needs flash_attn */
} strata_cache_type;

typedef struct strata_model strata_model;
typedef struct strata_context strata_context;
typedef struct strata_sampler strata_sampler;

/** Model and layout parameters; fill with strata_model_params_init, then change fields. */
typedef struct strata_model_params {
  int32_t n_threads;            /**< contexts' default worker threads; 0: all cores */
  const char* devices;          /**< "part:0,part:1"; NULL or "": the partitions made */
  int32_t n_partitions;         /**< split the CPU into N partition devices (0..256) */
  uint64_t device_mem_bytes;    /**< memory budget per partition; 0: none */
  int32_t n_gpu_layers;         /**< the last N layers go to the devices (needs devices) */
  strata_split_mode split_mode; /**< STRATA_SPLIT_LAYER by default */
  const float* tensor_split;    /**< proportions per device; NULL: even */
  size_t n_tensor_split;        /**< entries in tensor_split */
  bool kv_offload;              /**< each layer's KV cache lives with the layer (true) */
  bool pipeline;                /**< overlap micro-batches across devices (true) */
  bool paged;                   /**< run through the paged path (false) */
  uint64_t kv_resident_bytes;   /**< KV paging: resident KV per device; 0: no paging */
  const char* kv_home_file;     /**< KV paging: the home file; NULL: host memory */
  bool stream_weights;          /**< layers a device cannot hold stream from the file (false) */
  uint64_t mem_budget_bytes;    /**< host memory budget, weights streamed beyond it; 0: none */
} strata_model_params;

/** Context (session) parameters; fill with strata_context_params_init. */
typedef struct strata_context_params {
  uint32_t n_ctx;           /**< context size in tokens; 0: the model's training context */
  uint32_t n_batch;         /**< most tokens one strata_decode keeps logits for (2048) */
  uint32_t n_ubatch;        /**< tokens per graph run (512) */
  int32_t n_threads;        /**< worker threads; 0: the model's n_threads */
  strata_cache_type type_k; /**< STRATA_CACHE_F16 */
  strata_cache_type type_v; /**< STRATA_CACHE_F16 */
  bool flash_attn;          /**< fused attention (false) */
} strata_context_params;

/** Sampling parameters; fill with strata_sampler_params_init. temperature 0 is greedy. */
typedef struct strata_sampler_params {
  float temperature;     /**< <= 0 takes the most likely token (0.8) */
  int32_t top_k;         /**< keep the k most likely; <= 0 keeps all (40) */
  float top_p;           /**< nucleus filter in (0, 1]; 1 keeps all (0.95) */
  float min_p;           /**< drop tokens below min_p * the top probability, [0, 1] (0.05) */
  float repeat_penalty;  /**< > 1 discourages recent tokens; 1 disables (1.0) */
  int32_t repeat_last_n; /**< tokens the penalty looks back (64) */
  uint64_t seed;         /**< random seed; the same seed gives the same draws */
} strata_sampler_params;

/* ---- library ---- */

/** The library's version, "MAJOR.MINOR.PATCH". Never NULL. */
STRATA_API const char* strata_version(void);
/** The message of this thread's last failed call ("" if none), starting with what failed.
 *  Valid until this thread's next failed call. Never NULL. */
STRATA_API const char* strata_last_error(void);
/** A constant name for a status, e.g. "STRATA_ERR_IO". Never NULL. */
STRATA_API const char* strata_status_name(strata_status status);

/* ---- models ---- */

/** Fills `params` with the defaults. */
STRATA_API strata_status strata_model_params_init(strata_model_params* params);
/** Opens the GGUF file at `path` with the layout `params` describe (NULL: the defaults) and
 *  stores the handle in `*model`. Free it with strata_model_free after its contexts. */
STRATA_API strata_status strata_model_open(const char* path, const strata_model_params* params,
                                           strata_model** model);
/** Frees a model. NULL is allowed. Free its contexts first. */
STRATA_API void strata_model_free(strata_model* model);
/** Vocabulary size; -1 for a NULL model. */
STRATA_API int32_t strata_model_n_vocab(const strata_model* model);
/** Context length the model was trained with; -1 for a NULL model. */
STRATA_API int64_t strata_model_n_ctx_train(const strata_model* model);
/** Beginning-of-sequence token, -1 if the vocabulary has none or the model is NULL. */
STRATA_API int32_t strata_token_bos(const strata_model* model);
/** End-of-sequence token, -1 if the vocabulary has none or the model is NULL. */
STRATA_API int32_t strata_token_eos(const strata_model* model);
/** Whether `token` ends generation (EOS, EOT, ...); false for a NULL model. */
STRATA_API bool strata_token_is_eog(const strata_model* model, int32_t token);

/* ---- text ---- */

/** Tokenizes `text_len` bytes of `text`. `add_bos` adds BOS (and EOS) where the vocabulary
 *  asks for them; `parse_special` turns control-token texts into their tokens. `*n_tokens`
 *  always receives the count needed; if it exceeds `capacity` the result is
 *  STRATA_ERR_BUFFER_TOO_SMALL and nothing is written (`tokens` may be NULL when capacity is
 *  0, to ask for the size). */
STRATA_API strata_status strata_tokenize(const strata_model* model, const char* text,
                                         size_t text_len, bool add_bos, bool parse_special,
                                         int32_t* tokens, size_t capacity, size_t* n_tokens);
/** The text of one token, NUL-terminated, into `buf`. `render_special` gives control tokens'
 *  text (else ""). `*n_bytes` receives the length without the NUL; if the text and its NUL
 *  do not fit `capacity` the result is STRATA_ERR_BUFFER_TOO_SMALL. An id outside the
 *  vocabulary is STRATA_ERR_OUT_OF_RANGE. */
STRATA_API strata_status strata_token_to_piece(const strata_model* model, int32_t token,
                                               bool render_special, char* buf, size_t capacity,
                                               size_t* n_bytes);
/** The text of `n` tokens, NUL-terminated, as strata_token_to_piece. `strip_leading_space`
 *  removes the space a SentencePiece vocabulary puts before the first word. */
STRATA_API strata_status strata_detokenize(const strata_model* model, const int32_t* tokens,
                                           size_t n, bool strip_leading_space, bool render_special,
                                           char* buf, size_t capacity, size_t* n_bytes);

/* ---- contexts ---- */

/** Fills `params` with the defaults. */
STRATA_API strata_status strata_context_params_init(strata_context_params* params);
/** Creates a context (one sequence with its KV cache) over `model`, laid out as the model was
 *  opened. `params` NULL: the defaults. A context too large for the machine's memory is
 *  STRATA_ERR_OUT_OF_MEMORY. */
STRATA_API strata_status strata_context_create(strata_model* model,
                                               const strata_context_params* params,
                                               strata_context** ctx);
/** Frees a context. NULL is allowed. */
STRATA_API void strata_context_free(strata_context* ctx);
/** Context size in tokens; -1 for NULL. */
STRATA_API int64_t strata_context_n_ctx(const strata_context* ctx);
/** Tokens held in the context's cache; -1 for NULL. */
STRATA_API int64_t strata_context_n_past(const strata_context* ctx);
/** Forgets every token (the cache is emptied, the logits dropped). */
STRATA_API strata_status strata_context_reset(strata_context* ctx);

/** Evaluates `n` tokens of the context's one sequence at its next positions. Keeps the
 *  logits of every token when `all_logits` (then n may not exceed n_batch), else only of the
 *  last (longer inputs are split into n_batch pieces). Running past the context is
 *  STRATA_ERR_OUT_OF_RANGE and changes nothing, as is a token id outside the vocabulary
 *  (STRATA_ERR_INVALID_ARGUMENT). A multi-sequence batch call will sit beside this one. */
STRATA_API strata_status strata_decode(strata_context* ctx, const int32_t* tokens, size_t n,
                                       bool all_logits);
/** Logits kept by the last strata_decode: row `i` (0 first, -1 the last), `*n_vocab` floats at
 *  `*logits`, valid until the next decode or reset. A row not kept is STRATA_ERR_OUT_OF_RANGE.
 *  `n_vocab` may be NULL. */
STRATA_API strata_status strata_get_logits(const strata_context* ctx, int64_t i,
                                           const float** logits, int32_t* n_vocab);
/** Rows of logits the last strata_decode kept; 0 before any, -1 for NULL. */
STRATA_API int64_t strata_context_n_outputs(const strata_context* ctx);

/* ---- sampling ---- */

/** Fills `params` with the defaults (those of `strata run`). */
STRATA_API strata_status strata_sampler_params_init(strata_sampler_params* params);
/** Creates a sampler: repetition penalty, top-k, top-p, min-p, temperature, then a draw (or
 *  the argmax when greedy), in llama.cpp's order. */
STRATA_API strata_status strata_sampler_create(const strata_sampler_params* params,
                                               strata_sampler** sampler);
/** Frees a sampler. NULL is allowed. */
STRATA_API void strata_sampler_free(strata_sampler* sampler);
/** Records a token of the context (prompt or generated) for the repetition penalty. */
STRATA_API strata_status strata_sampler_accept(strata_sampler* sampler, int32_t token);
/** Picks a token from row `i` of `ctx`'s logits (-1: the last) into `*token`. It does not
 *  accept it: call strata_sampler_accept for the tokens you keep. */
STRATA_API strata_status strata_sample(strata_sampler* sampler, const strata_context* ctx,
                                       int64_t i, int32_t* token);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_H */
