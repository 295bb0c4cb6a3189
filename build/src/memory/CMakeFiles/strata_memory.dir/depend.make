# Empty dependencies file for strata_memory.
# This may be replaced when dependencies are built.
