
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/model/vocab.cpp" "src/model/CMakeFiles/strata_model.dir/vocab.cpp.o" "gcc" "src/model/CMakeFiles/strata_model.dir/vocab.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/src/gguf/CMakeFiles/strata_gguf.dir/DependInfo.cmake"
  "/work/main/build/src/backend/CMakeFiles/strata_backend.dir/DependInfo.cmake"
  "/work/main/build/src/memory/CMakeFiles/strata_memory.dir/DependInfo.cmake"
  "/work/main/build/src/core/CMakeFiles/strata_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
