# Empty compiler generated dependencies file for strata_core.
# This may be replaced when dependencies are built.
