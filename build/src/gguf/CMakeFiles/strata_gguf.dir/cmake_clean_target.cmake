file(REMOVE_RECURSE
  "libstrata_gguf.a"
)
