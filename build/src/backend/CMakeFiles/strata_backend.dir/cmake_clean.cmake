file(REMOVE_RECURSE
  "CMakeFiles/strata_backend.dir/device.cpp.o"
  "CMakeFiles/strata_backend.dir/device.cpp.o.d"
  "libstrata_backend.a"
  "libstrata_backend.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/strata_backend.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
