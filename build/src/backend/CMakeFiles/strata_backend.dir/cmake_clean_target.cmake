file(REMOVE_RECURSE
  "libstrata_backend.a"
)
