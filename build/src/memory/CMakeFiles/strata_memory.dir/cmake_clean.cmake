file(REMOVE_RECURSE
  "CMakeFiles/strata_memory.dir/buffer.cpp.o"
  "CMakeFiles/strata_memory.dir/buffer.cpp.o.d"
  "CMakeFiles/strata_memory.dir/free_list.cpp.o"
  "CMakeFiles/strata_memory.dir/free_list.cpp.o.d"
  "CMakeFiles/strata_memory.dir/graph_allocator.cpp.o"
  "CMakeFiles/strata_memory.dir/graph_allocator.cpp.o.d"
  "libstrata_memory.a"
  "libstrata_memory.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/strata_memory.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
