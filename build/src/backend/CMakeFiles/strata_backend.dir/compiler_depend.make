# Empty compiler generated dependencies file for strata_backend.
# This may be replaced when dependencies are built.
