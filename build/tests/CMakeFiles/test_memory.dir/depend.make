# Empty dependencies file for test_memory.
# This may be replaced when dependencies are built.
