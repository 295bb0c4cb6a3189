file(REMOVE_RECURSE
  "libstrata_memory.a"
)
