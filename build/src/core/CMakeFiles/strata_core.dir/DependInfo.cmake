
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/core/context.cpp" "src/core/CMakeFiles/strata_core.dir/context.cpp.o" "gcc" "src/core/CMakeFiles/strata_core.dir/context.cpp.o.d"
  "/work/main/src/core/graph.cpp" "src/core/CMakeFiles/strata_core.dir/graph.cpp.o" "gcc" "src/core/CMakeFiles/strata_core.dir/graph.cpp.o.d"
  "/work/main/src/core/op.cpp" "src/core/CMakeFiles/strata_core.dir/op.cpp.o" "gcc" "src/core/CMakeFiles/strata_core.dir/op.cpp.o.d"
  "/work/main/src/core/ops.cpp" "src/core/CMakeFiles/strata_core.dir/ops.cpp.o" "gcc" "src/core/CMakeFiles/strata_core.dir/ops.cpp.o.d"
  "/work/main/src/core/tensor.cpp" "src/core/CMakeFiles/strata_core.dir/tensor.cpp.o" "gcc" "src/core/CMakeFiles/strata_core.dir/tensor.cpp.o.d"
  "/work/main/src/core/types.cpp" "src/core/CMakeFiles/strata_core.dir/types.cpp.o" "gcc" "src/core/CMakeFiles/strata_core.dir/types.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
