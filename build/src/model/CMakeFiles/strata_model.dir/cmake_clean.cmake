file(REMOVE_RECURSE
  "CMakeFiles/strata_model.dir/vocab.cpp.o"
  "CMakeFiles/strata_model.dir/vocab.cpp.o.d"
  "libstrata_model.a"
  "libstrata_model.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/strata_model.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
