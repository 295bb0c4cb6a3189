# Empty compiler generated dependencies file for strata_gguf.
# This may be replaced when dependencies are built.
