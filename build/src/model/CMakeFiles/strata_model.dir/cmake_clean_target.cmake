file(REMOVE_RECURSE
  "libstrata_model.a"
)
