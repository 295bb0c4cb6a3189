
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/memory/buffer.cpp" "src/memory/CMakeFiles/strata_memory.dir/buffer.cpp.o" "gcc" "src/memory/CMakeFiles/strata_memory.dir/buffer.cpp.o.d"
  "/work/main/src/memory/free_list.cpp" "src/memory/CMakeFiles/strata_memory.dir/free_list.cpp.o" "gcc" "src/memory/CMakeFiles/strata_memory.dir/free_list.cpp.o.d"
  "/work/main/src/memory/graph_allocator.cpp" "src/memory/CMakeFiles/strata_memory.dir/graph_allocator.cpp.o" "gcc" "src/memory/CMakeFiles/strata_memory.dir/graph_allocator.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/src/core/CMakeFiles/strata_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
