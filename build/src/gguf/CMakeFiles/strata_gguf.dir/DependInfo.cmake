
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/gguf/cursor.cpp" "src/gguf/CMakeFiles/strata_gguf.dir/cursor.cpp.o" "gcc" "src/gguf/CMakeFiles/strata_gguf.dir/cursor.cpp.o.d"
  "/work/main/src/gguf/layout.cpp" "src/gguf/CMakeFiles/strata_gguf.dir/layout.cpp.o" "gcc" "src/gguf/CMakeFiles/strata_gguf.dir/layout.cpp.o.d"
  "/work/main/src/gguf/mapping.cpp" "src/gguf/CMakeFiles/strata_gguf.dir/mapping.cpp.o" "gcc" "src/gguf/CMakeFiles/strata_gguf.dir/mapping.cpp.o.d"
  "/work/main/src/gguf/metadata_reader.cpp" "src/gguf/CMakeFiles/strata_gguf.dir/metadata_reader.cpp.o" "gcc" "src/gguf/CMakeFiles/strata_gguf.dir/metadata_reader.cpp.o.d"
  "/work/main/src/gguf/value.cpp" "src/gguf/CMakeFiles/strata_gguf.dir/value.cpp.o" "gcc" "src/gguf/CMakeFiles/strata_gguf.dir/value.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/src/core/CMakeFiles/strata_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
