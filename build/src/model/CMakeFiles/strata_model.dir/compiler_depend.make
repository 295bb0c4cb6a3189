# Empty compiler generated dependencies file for strata_model.
# This may be replaced when dependencies are built.
