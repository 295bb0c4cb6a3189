file(REMOVE_RECURSE
  "libstrata_core.a"
)
