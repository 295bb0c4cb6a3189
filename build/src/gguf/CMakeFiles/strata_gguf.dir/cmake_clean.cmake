file(REMOVE_RECURSE
  "CMakeFiles/strata_gguf.dir/cursor.cpp.o"
  "CMakeFiles/strata_gguf.dir/cursor.cpp.o.d"
  "CMakeFiles/strata_gguf.dir/layout.cpp.o"
  "CMakeFiles/strata_gguf.dir/layout.cpp.o.d"
  "CMakeFiles/strata_gguf.dir/mapping.cpp.o"
  "CMakeFiles/strata_gguf.dir/mapping.cpp.o.d"
  "CMakeFiles/strata_gguf.dir/metadata_reader.cpp.o"
  "CMakeFiles/strata_gguf.dir/metadata_reader.cpp.o.d"
  "CMakeFiles/strata_gguf.dir/value.cpp.o"
  "CMakeFiles/strata_gguf.dir/value.cpp.o.d"
  "libstrata_gguf.a"
  "libstrata_gguf.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/strata_gguf.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
