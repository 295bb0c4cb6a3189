file(REMOVE_RECURSE
  "CMakeFiles/test_memory.dir/memory/test_graph_allocator.cpp.o"
  "CMakeFiles/test_memory.dir/memory/test_graph_allocator.cpp.o.d"
  "test_memory"
  "test_memory.pdb"
  "test_memory[1]_tests.cmake"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/test_memory.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
