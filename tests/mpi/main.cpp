// The MPI tests' entry point: under mpirun, ranks other than 0 serve rank 0 (as strata's do)
// and rank 0 runs the tests with every rank's devices registered; without mpirun the tests
// that need ranks are skipped.
#include <gtest/gtest.h>

#include <cstdio>

#include "mpi/cluster.h"

int main(int argc, char** argv) {
  auto started = strata::mpi::start(&argc, &argv);
  if (!started.ok()) {
    std::fprintf(stderr, "test_mpi: %s\n", started.status().message().c_str());
    return 1;
  }
  if (started->has_value()) return **started;
  ::testing::InitGoogleTest(&argc, argv);
  const int code = RUN_ALL_TESTS();
  strata::mpi::stop();
  return code;
}
