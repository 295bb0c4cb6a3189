/* Greedy generation with strata's C API: prints the prompt and then up to N generated tokens,
 * as `strata run -m MODEL -p PROMPT -n N --temp 0` does.
 *
 * usage: generate MODEL PROMPT [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata.h>

static int fail(const char* what, strata_status st) {
  fprintf(stderr, "generate: %s: %s (%s)\n", what, strata_last_error(), strata_status_name(st));
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL PROMPT [N]\n", argv[0]);
    return 2;
  }
  const char* prompt = argv[2];
  const int n_predict = argc > 3 ? atoi(argv[3]) : 32;

  strata_model* model = NULL;
  strata_status st = strata_model_open(argv[1], NULL, &model);
  if (st != STRATA_OK) return fail("opening the model", st);
  strata_context* ctx = NULL;
  st = strata_context_create(model, NULL, &ctx);
  if (st != STRATA_OK) return fail("creating a context", st);

  /* Ask for the size first, then tokenize into a buffer of that size. */
  size_t n_tokens = 0;
  st = strata_tokenize(model, prompt, strlen(prompt), true, false, NULL, 0, &n_tokens);
  if (st != STRATA_OK && st != STRATA_ERR_BUFFER_TOO_SMALL) return fail("tokenizing", st);
  int32_t* tokens = malloc(n_tokens * sizeof *tokens);
  if (tokens == NULL) return 1;
  st = strata_tokenize(model, prompt, strlen(prompt), true, false, tokens, n_tokens, &n_tokens);
  if (st != STRATA_OK) return fail("tokenizing", st);

  strata_sampler_params sp;
  strata_sampler_params_init(&sp);
  sp.temperature = 0.0f;
  strata_sampler* sampler = NULL;
  st = strata_sampler_create(&sp, &sampler);
  if (st != STRATA_OK) return fail("creating a sampler", st);

  st = strata_decode(ctx, tokens, n_tokens, false);
  if (st != STRATA_OK) return fail("decoding the prompt", st);
  fputs(prompt, stdout);
  char piece[256];
  for (int i = 0; i < n_predict; ++i) {
    int32_t next = 0;
    st = strata_sample(sampler, ctx, -1, &next);
    if (st != STRATA_OK) return fail("sampling", st);
    if (strata_token_is_eog(model, next)) break;
    strata_sampler_accept(sampler, next);
    size_t n_bytes = 0;
    st = strata_token_to_piece(model, next, false, piece, sizeof piece, &n_bytes);
    if (st != STRATA_OK) return fail("reading a token's text", st);
    fwrite(piece, 1, n_bytes, stdout);
    if (i + 1 == n_predict || strata_context_n_past(ctx) >= strata_context_n_ctx(ctx)) break;
    st = strata_decode(ctx, &next, 1, false);
    if (st != STRATA_OK) return fail("decoding", st);
  }
  fputc('\n', stdout);

  strata_sampler_free(sampler);
  free(tokens);
  strata_context_free(ctx);
  strata_model_free(model);
  return 0;
}
