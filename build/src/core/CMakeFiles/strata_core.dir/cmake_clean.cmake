file(REMOVE_RECURSE
  "CMakeFiles/strata_core.dir/context.cpp.o"
  "CMakeFiles/strata_core.dir/context.cpp.o.d"
  "CMakeFiles/strata_core.dir/graph.cpp.o"
  "CMakeFiles/strata_core.dir/graph.cpp.o.d"
  "CMakeFiles/strata_core.dir/op.cpp.o"
  "CMakeFiles/strata_core.dir/op.cpp.o.d"
  "CMakeFiles/strata_core.dir/ops.cpp.o"
  "CMakeFiles/strata_core.dir/ops.cpp.o.d"
  "CMakeFiles/strata_core.dir/tensor.cpp.o"
  "CMakeFiles/strata_core.dir/tensor.cpp.o.d"
  "CMakeFiles/strata_core.dir/types.cpp.o"
  "CMakeFiles/strata_core.dir/types.cpp.o.d"
  "libstrata_core.a"
  "libstrata_core.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/strata_core.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
